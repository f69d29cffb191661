// linea/backend/cuda/backward/plan.hpp — the backward's device scratch: the chunk table (every chunk of every
// sequence) and the float32 workspace of work.hpp, how many bytes they take (linea::cuda::backward_workspace_size)
// and where each part lies. The table is built on the host from the arguments' extents and host cu_seqlens, so the
// size is known before the call; nothing here touches the device.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "../../../core/arguments.hpp"
#include "work.hpp"

namespace linea::cuda_detail::bwd {

struct backward_plan {
  std::vector<chunk_info> chunks;
  std::vector<seq_chunks> seqs;
  index_t tokens = 0, H = 0, HV = 0, K = 0, V = 0;
  bool per_key = false, erases = false;
  std::size_t chunk_at = 0, seq_at = 0, float_at = 0, key_at = 0, inter_at = 0;  // byte offsets
  std::size_t floats = 0, key_floats = 0, inter_floats = 0, bytes = 0;

  std::size_t per_chunk() const { return chunks.size() * std::size_t(HV); }
};

// Reads only extents and host cu_seqlens (clamped, so it is safe before validation; the call validates first).
// per_key: the rule's decay is per key channel (its tensors below); erases: its update erases (the UT-transform
// adjoints' scratch of 16-bit inputs).
template <class T, class S>
backward_plan plan_backward(const arguments<T, S>& a, bool per_key, bool erases) {
  backward_plan p;
  const index_t B = a.q.extent(0), T_ = a.q.extent(1);
  p.H = a.q.extent(2), p.K = a.q.extent(3), p.HV = a.v.extent(2), p.V = a.v.extent(3), p.tokens = B * T_;
  p.per_key = per_key, p.erases = erases;
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
  const std::size_t tokens = std::size_t(p.tokens), H = std::size_t(p.H), HV = std::size_t(p.HV),
                    K = std::size_t(p.K), V = std::size_t(p.V), pc = p.per_chunk();
  p.floats = tokens * (2 * H * K + 2 * HV * V + 3 * HV + 2 * HV * K + 2 * HV) +
             pc * (CL + 2 * CL * CL + CL * K + 3 * CL * V + 2 * K * V);
  p.key_floats = per_key ? tokens * 2 * HV * K + pc * (3 * CL * K + K) : 0;
  // phase 4's inter-chunk kernel (16-bit inputs, scalar decays: phases.hpp's grad_phase) hands over dW and dP, the
  // UT-transform kernels dBv and M (erasing rules only)
  p.inter_floats = !per_key && sizeof(T) == 2 ? pc * (CL * K + CL * CL + (erases ? CL * V + CL * CL : 0)) : 0;
  const auto take = [&](std::size_t n) {
    const std::size_t at = p.bytes;
    p.bytes += (n + 255) / 256 * 256;  // every part 256-byte aligned past the (16-byte aligned) base
    return at;
  };
  p.chunk_at = take(p.chunks.size() * sizeof(chunk_info));
  p.seq_at = take(p.seqs.size() * sizeof(seq_chunks));
  p.float_at = take(p.floats * sizeof(float));
  p.key_at = take(p.key_floats * sizeof(float));
  p.inter_at = take(p.inter_floats * sizeof(float));
  return p;
}

// The workspace's float32 tensors (work.hpp's layouts), carved from `base` in plan order.
inline void carve(work& w, const backward_plan& p, unsigned char* base) {
  const std::size_t tokens = std::size_t(p.tokens), H = std::size_t(p.H), HV = std::size_t(p.HV),
                    K = std::size_t(p.K), V = std::size_t(p.V), pc = p.per_chunk();
  float* at = reinterpret_cast<float*>(base + p.float_at);
  const auto next = [&](std::size_t n) {
    float* x = at;
    at += n;
    return x;
  };
  w.q = next(tokens * H * K), w.k = next(tokens * H * K), w.v = next(tokens * HV * V), w.d_o = next(tokens * HV * V);
  w.log_alpha = next(tokens * HV), w.erase = next(tokens * HV), w.write = next(tokens * HV);
  w.dq = next(tokens * HV * K), w.dk = next(tokens * HV * K), w.dlog_alpha = next(tokens * HV), w.derase = next(tokens * HV);
  w.Gc = next(pc * CL), w.P = next(pc * CL * CL), w.Tinv = next(pc * CL * CL);
  w.W = next(pc * CL * K), w.U = next(pc * CL * V), w.U_new = next(pc * CL * V);
  w.dU = next(pc * CL * V), w.h = next(pc * K * V), w.dh = next(pc * K * V);
  if (p.per_key) {
    at = reinterpret_cast<float*>(base + p.key_at);
    w.log_alpha_k = next(tokens * HV * K), w.dlog_alpha_k = next(tokens * HV * K);
    w.Gk = next(pc * CL * K), w.Kd = next(pc * CL * K), w.Qg = next(pc * CL * K);
    w.gL = next(pc * K);
  }
  if (p.inter_floats) {
    at = reinterpret_cast<float*>(base + p.inter_at);
    w.dW_inter = next(pc * CL * K), w.dP_inter = next(pc * CL * CL);
    if (p.erases) w.dBv_inter = next(pc * CL * V), w.M_inter = next(pc * CL * CL);
  }
}

}  // namespace linea::cuda_detail::bwd
