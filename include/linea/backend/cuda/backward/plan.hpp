// linea/backend/cuda/backward/plan.hpp — the backward's device scratch: the chunk table (every chunk of every
// sequence) and the float32 workspace of work.hpp, how many bytes they take (linea::cuda::backward_workspace_size)
// and where each part lies. The table is built on the host from the arguments' extents and host cu_seqlens, so the
// size is known before the call; nothing here touches the device.
//
// Alignment: every part and every float32 slot of a part starts a multiple of slot_bytes (256) past the workspace's
// base, which is 16-byte aligned (a caller's workspace is checked, backward.hpp; linea's own comes from cudaMalloc),
// so every slot is 16-byte aligned whatever the extents. The kernels read and write slots with float2 / float4 and
// 16-byte cp.async (the st17 ring's state slabs faulted with cudaErrorMisalignedAddress when slots were laid end to
// end: an odd tokens · HV left every later slot 4-byte aligned, fuzz seed 20261220 case 40, seed 20261207 case 1303).
// The one list of slots (float_slots) sizes the plan and carves the workspace, so the two cannot disagree.
//
// Which slots: every one (phases 0–5 of every rule), or only what the additive fast path (add16_phases.hpp: linear_attn
// and simple_gla with 16-bit inputs) uses — its bf16 states h, dH in the h and dh slots, and, where it goes through
// phases 0 and 5 (add16_io.hpp), their float32 inputs and dq, dk, d log α. At 8×4096, H = 16, K = V = 128 that is
// 0.54 GB (direct) or 2.2 GB (through phases 0 and 5) instead of the 4.4 GB every slot takes.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "../../../core/arguments.hpp"
#include "../../../core/error.hpp"
#include "../alignment.hpp"
#include "work.hpp"

namespace linea::cuda_detail::bwd {

// Where every part and every float32 slot starts: a multiple of slot_bytes past the workspace's base (alignment.hpp).
inline constexpr std::size_t slot_bytes = part_bytes;
inline constexpr std::size_t slot_floats = slot_bytes / sizeof(float);
inline constexpr std::size_t slot_round(std::size_t floats) { return (floats + slot_floats - 1) / slot_floats * slot_floats; }
// A byte offset or size rounded up to the next slot boundary (parts of the plan and of backward.hpp's scratch).
inline constexpr std::size_t slot_align(std::size_t bytes) { return part_align(bytes); }

enum class slots {
  all,           // phases 0–5 (chunk_phases, the CCQ read's passes)
  add16_io,      // the additive fast path through phases 0 and 5: q, k, v, dO, log α, dq, dk, d log α; h, dh in bf16
  add16_direct,  // the additive fast path on the caller's tensors: h, dh in bf16 only
};

struct backward_plan {
  std::vector<chunk_info> chunks;
  std::vector<seq_chunks> seqs;
  index_t tokens = 0, H = 0, HV = 0, K = 0, V = 0;
  bool per_key = false, erases = false;
  bool inter = false;  // phase 4's hand-over scratch (16-bit inputs, scalar decays — per key too with per_key_inter:
                       // phases.hpp's grad_phase)
  slots use = slots::all;
  std::size_t chunk_at = 0, seq_at = 0, float_at = 0, key_at = 0, inter_at = 0;  // byte offsets
  std::size_t floats = 0, key_floats = 0, inter_floats = 0, bytes = 0;  // each part's floats, its slots rounded

  std::size_t per_chunk() const { return chunks.size() * std::size_t(HV); }
};

// The three float32 parts of the workspace: work.hpp's tensors of every rule, the per-key decays' (their tensors
// below), phase 4's hand-over scratch.
enum class part { rule, per_key, inter };

// Every float32 slot of the plan in carve order: f(part, the work member it fills, its floats). plan_backward sums
// the sizes (each rounded up to slot_floats), carve walks the same list.
template <class F>
void float_slots(const backward_plan& p, F&& f) {
  const std::size_t tokens = std::size_t(p.tokens), H = std::size_t(p.H), HV = std::size_t(p.HV),
                    K = std::size_t(p.K), V = std::size_t(p.V), pc = p.per_chunk();
  constexpr part R = part::rule;
  if (p.use != slots::all) {  // the additive fast path (the header's note)
    if (p.use == slots::add16_io) {
      f(R, &work::q, tokens * H * K), f(R, &work::k, tokens * H * K);
      f(R, &work::v, tokens * HV * V), f(R, &work::d_o, tokens * HV * V), f(R, &work::log_alpha, tokens * HV);
      f(R, &work::dq, tokens * HV * K), f(R, &work::dk, tokens * HV * K), f(R, &work::dlog_alpha, tokens * HV);
    }
    const std::size_t states16 = (pc * K * ((V + 1) / 2 * 2) + 1) / 2;  // bf16 [chunks, HV, K, Vp] in floats
    f(R, &work::h, states16), f(R, &work::dh, states16);
    return;
  }
  f(R, &work::q, tokens * H * K), f(R, &work::k, tokens * H * K);
  f(R, &work::v, tokens * HV * V), f(R, &work::d_o, tokens * HV * V);
  f(R, &work::log_alpha, tokens * HV), f(R, &work::erase, tokens * HV), f(R, &work::write, tokens * HV);
  f(R, &work::dq, tokens * HV * K), f(R, &work::dk, tokens * HV * K);
  f(R, &work::dlog_alpha, tokens * HV), f(R, &work::derase, tokens * HV);
  f(R, &work::Gc, pc * CL), f(R, &work::P, pc * CL * CL), f(R, &work::Tinv, pc * CL * CL);
  f(R, &work::W, pc * CL * K), f(R, &work::U, pc * CL * V), f(R, &work::U_new, pc * CL * V);
  f(R, &work::dU, pc * CL * V), f(R, &work::h, pc * K * V), f(R, &work::dh, pc * K * V);
  if (p.per_key) {
    constexpr part P = part::per_key;
    f(P, &work::log_alpha_k, tokens * HV * K), f(P, &work::dlog_alpha_k, tokens * HV * K);
    f(P, &work::Gk, pc * CL * K), f(P, &work::Kd, pc * CL * K);  // (no Qg: nothing writes or reads it, work.hpp)
    f(P, &work::gL, pc * K);
  }
  if (p.inter) {
    // phase 4's inter-chunk kernel hands over dW and dP, the UT-transform kernels dBv and M (erasing rules only)
    constexpr part I = part::inter;
    f(I, &work::dW_inter, pc * CL * K), f(I, &work::dP_inter, pc * CL * CL);
    if (p.erases) f(I, &work::dBv_inter, pc * CL * V), f(I, &work::M_inter, pc * CL * CL);
  }
}

// Reads only extents and host cu_seqlens (clamped, so it is safe before validation; the call validates first).
// per_key: the rule's decay is per key channel (its tensors below); erases: its update erases (the UT-transform
// adjoints' scratch of 16-bit inputs); use: which slots (slots above).
template <class T, class S>
backward_plan plan_backward(const arguments<T, S>& a, bool per_key, bool erases, slots use = slots::all) {
  backward_plan p;
  p.use = use;
  const index_t B = a.q.extent(0), T_ = a.q.extent(1);
  p.H = a.q.extent(2), p.K = a.q.extent(3), p.HV = a.v.extent(2), p.V = a.v.extent(3), p.tokens = B * T_;
  p.per_key = per_key, p.erases = erases, p.inter = (!per_key || per_key_inter) && sizeof(T) == 2 && use == slots::all;
  const auto add = [&](index_t bt, index_t t0, index_t t1) {
    const index_t n = index_t(p.seqs.size());
    p.seqs.push_back({index_t(p.chunks.size()), std::max<index_t>(0, (t1 - t0 + CL - 1) / CL)});
    for (index_t t = t0; t < t1; t += CL) p.chunks.push_back({bt, t, int(std::min<index_t>(CL, t1 - t)), int(n)});
  };
  if (!a.cu_seqlens.empty()) {
    const std::vector<std::int64_t> cu = a.cu_seqlens.to_int64();
    for (std::size_t n = 0; n + 1 < cu.size(); ++n) add(0, index_t(cu[n]), std::max(index_t(cu[n]), index_t(cu[n + 1])));
  } else {
    for (index_t b = 0; b < B; ++b) add(b, 0, T_);
  }
  float_slots(p, [&](part r, float* work::*, std::size_t n) {
    (r == part::rule ? p.floats : r == part::per_key ? p.key_floats : p.inter_floats) += slot_round(n);
  });
  const auto take = [&](std::size_t n) {
    const std::size_t at = p.bytes;
    p.bytes += slot_align(n);
    return at;
  };
  p.chunk_at = take(p.chunks.size() * sizeof(chunk_info));
  p.seq_at = take(p.seqs.size() * sizeof(seq_chunks));
  p.float_at = take(p.floats * sizeof(float));
  p.key_at = take(p.key_floats * sizeof(float));
  p.inter_at = take(p.inter_floats * sizeof(float));
  return p;
}

// The workspace's float32 tensors (work.hpp's layouts), carved from `base` (p.bytes bytes, 16-byte aligned) in plan
// order.
inline void carve(work& w, const backward_plan& p, unsigned char* base) {
  if (reinterpret_cast<std::uintptr_t>(base) % 16 != 0)
    throw linea::error("cuda backward: internal: the workspace's base is not 16-byte aligned (plan.hpp)");
  unsigned char* at[] = {base + p.float_at, base + p.key_at, base + p.inter_at};  // by part
  float_slots(p, [&](part r, float* work::*slot, std::size_t n) {
    unsigned char*& next = at[int(r)];
    w.*slot = reinterpret_cast<float*>(next);
    next += sizeof(float) * slot_round(n);
  });
}

// The work of a call over the workspace at base (plan.bytes bytes, 16-byte aligned): the problem's sizes, where the
// chunk and sequence tables lie (copying plan.chunks and plan.seqs there is the caller's: backward.hpp's run), the
// float32 slots. An empty plan (no tokens, no sequences) leaves the pointers null.
inline work plan_work(const problem& p, const backward_plan& plan, unsigned char* base) {
  work w;
  w.T = p.T, w.H = p.H, w.HV = p.HV, w.K = p.K, w.V = p.V, w.G = p.group, w.N = p.N;
  w.chunks = index_t(plan.chunks.size()), w.scale = float(p.scale);
  if (plan.bytes) {
    w.chunk = reinterpret_cast<const chunk_info*>(base + plan.chunk_at);
    w.seqs = reinterpret_cast<const seq_chunks*>(base + plan.seq_at);
    carve(w, plan, base);
  }
  return w;
}

}  // namespace linea::cuda_detail::bwd
