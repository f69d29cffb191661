// linea/backend/cuda/backward/ccq_read.hpp — phases 1–4 of the CUDA backward for the CCQ read, composed of the
// rule's own phases and of the same phases for the statistics pass (centred statistics: ccq_read_kernels.hpp):
//
//   setup, initial   c_t, k̂ and q̂ per value head; M_0 = C_0 − m_0 m_0ᵀ / z_0
//   scan             z_t, μ_t, δ_t = k̂_t − μ_{t-1}, u_t = w_t δ_t
//   stats 1, 2       the statistics pass M_t = a_t M_{t-1} + u_t δ_tᵀ (additive, log decay c_t, keys u, values δ,
//                    M_0): its chunk factors and states h_c
//   tilde            Y_t = M_t q̂_t and q̃_t = q̂_t − λ_t Y_t / z_t (the forward's q̃, recomputed)
//   rule 1–4         the rule's backward with q̃ as the query (keys per value head: the read is per value head)
//                    → dq̃, dk̂, dv, d log α, de, dS_0
//   direct           dλ, dY, dL/dz_t's direct part
//   stats 1, 3, 4    the statistics pass backward with d_o := dY → dq̂ (M dY), du, dδ, its d log α, dM_0
//                    (phase 1 again: it seeds phase 3 from d_o)
//   mean, dots, count  the adjoints of μ and z carried backward → dL/dδ_t (dk̂), the read's dc_t; dC_0, dm_0, dz_0
//   finish           the sums, and dc_t to ccq.log_decay's gradient or to the rule's log decay
// The rule's work then holds dq̂, dk̂, d log α as for the identity read, and phase 5 finishes as usual.
// M_0 enters as its transpose (the statistics pass's state is read as Sᵀq; Y = M q), so does dM_0 leave.
#pragma once
#include <utility>

#include "ccq_read_kernels.hpp"
#include "phases.hpp"
#include "plan.hpp"

namespace linea::cuda_detail::bwd {

// The workspace of a CCQ backward: the rule's plan, then the statistics pass's (values of width K), then ccq_work's
// own tensors.
struct ccq_plan {
  backward_plan stats;
  std::size_t stats_at = 0, extra_at = 0, bytes = 0;
};

// ccq_work's tensors each start 256-byte aligned (some of them are the passes' queries and keys, read in 16-byte copies).
inline std::size_t ccq_aligned(std::size_t floats) { return (floats + 63) / 64 * 64; }

template <class T, class S>
ccq_plan plan_ccq(const arguments<T, S>& a, const backward_plan& rule) {
  ccq_plan p;
  arguments<T, S> s = a;  // the statistics pass: values [B, T, HV, K] (extents only)
  s.v = strided<4>(a.v.ptr, {a.v.extent(0), a.v.extent(1), a.v.extent(2), a.q.extent(3)}, {0, 0, 0, 0});
  p.stats = plan_backward(s, false, false);  // (additive: C_t = a_t C_{t-1} + k̂ k̂ᵀ)
  const std::size_t rows = std::size_t(rule.tokens) * std::size_t(rule.HV), K = std::size_t(rule.K);
  p.stats_at = slot_align(rule.bytes);
  p.extra_at = p.stats_at + slot_align(p.stats.bytes);
  const std::size_t initial = std::size_t(rule.seqs.size()) * std::size_t(rule.HV) * K * K;  // M_0, dM_0
  const std::size_t floats = 8 * ccq_aligned(rows * K) + 5 * ccq_aligned(rows) + 2 * ccq_aligned(initial);
  p.bytes = rows || initial ? p.extra_at + sizeof(float) * floats : rule.bytes;
  return p;
}

template <class V>
V transposed_last(V v) {  // the same matrix read as its transpose (last two dimensions swapped)
  std::swap(v.ext[2], v.ext[3]);
  std::swap(v.str[2], v.str[3]);
  return v;
}

template <class Rule, class Read, class T>
void ccq_phases(const arguments<T, float>& a, const gradients<T, float>& g, const work& wm, const ccq_plan& plan,
                unsigned char* base, cudaStream_t st, const channel_gates& cg, const channel_grads<T>& cd) {
  constexpr bool erases = Rule::update::kind == update_kind::erase;
  constexpr bool decays = Rule::decay::kind == decay_kind::scalar;
  constexpr bool per_key = Rule::decay::kind == decay_kind::per_key;
  const index_t NC = wm.chunks, K = wm.K, HV = wm.HV;
  // The statistics pass's work: additive, log decay c_t, keys u, values δ (both per value head: H := HV), queries
  // q̂ per value head, read scale 1.
  work ws = wm;
  ws.V = K, ws.scale = 1.f;
  carve(ws, plan.stats, base + plan.stats_at);
  ws.log_alpha_k = ws.dlog_alpha_k = ws.Gk = ws.Kd = ws.Qg = ws.gL = nullptr;

  ccq_work cw;
  cw.T = wm.T, cw.H = wm.H, cw.HV = HV, cw.K = K, cw.G = wm.G, cw.chunk = wm.chunk, cw.seqs = wm.seqs;
  cw.qhat = wm.q, cw.khat = wm.k, cw.delta = ws.v, cw.c = ws.log_alpha, cw.y = ws.d_o;
  {
    const index_t B = a.q.extent(0);
    const std::size_t rows = std::size_t(wm.T) * std::size_t(B) * std::size_t(HV), k = std::size_t(K);
    float* at = reinterpret_cast<float*>(base + plan.extra_at);
    const auto next = [&](std::size_t n) { float* x = at; at += ccq_aligned(n); return x; };
    cw.qt = next(rows * k), cw.mu = next(rows * k), cw.e = next(rows * k), cw.dkv = next(rows * k);
    cw.kv = next(rows * k), cw.qv = next(rows * k), cw.u = next(rows * k), cw.gmu = next(rows * k);
    cw.z = next(rows), cw.az = next(rows), cw.dz = next(rows), cw.dw = next(rows), cw.sg = next(rows);
    const std::size_t initial = std::size_t(wm.N) * std::size_t(HV) * k * k;
    cw.M0 = next(initial), cw.dM0 = next(initial);
  }
  ws.q = cw.qv, ws.k = cw.u, ws.H = HV, ws.G = 1;
  ccq_decay_source from = ccq_decay_source::none;
  if constexpr (Read::weighting::decays) {
    if (!a.ccq.log_decay.empty()) from = ccq_decay_source::given;
    else if constexpr (decays) from = ccq_decay_source::rule_scalar;
    else if constexpr (per_key) from = ccq_decay_source::rule_key_mean;
  }
  const dim3 per_chunk{unsigned(NC), unsigned(HV)}, per_seq{unsigned(HV), unsigned(wm.N)};
  const index_t B = a.q.extent(0);
  const auto M0 = contiguous<4>(static_cast<const float*>(cw.M0), {wm.N, HV, K, K});
  const auto dM0 = contiguous<4>(cw.dM0, {wm.N, HV, K, K});

  // (Per-chunk launches only when there are chunks; the per-sequence ones still write dC_0, dm_0, dz_0 = 0.)
  if (NC) {
    ccq_setup_kernel<T><<<per_chunk, threads, 0, st>>>(cw, wm.log_alpha, wm.log_alpha_k, a.ccq.log_decay, from);
    check_launch("backward ccq_setup_kernel");
  }
  if (wm.N) {
    ccq_initial_kernel<><<<per_seq, max_kv, 0, st>>>(cw, a.ccq.C0, a.ccq.m0, a.ccq.z0);
    check_launch("backward ccq_initial_kernel");
    ccq_scan_kernel<><<<per_seq, max_kv, 0, st>>>(cw, a.ccq.m0, a.ccq.z0);
    check_launch("backward ccq_scan_kernel");
  }
  prep_phase<false, false>(ws, st);
  state_phases<false, false>(ws, transposed_last(M0), {}, {}, true, false, st);
  if (NC) {
    const std::size_t tilde_bytes = sizeof(float) * std::size_t(CL * K + K * K);
    int device = 0;
    LINEA_CUDA_CHECK(cudaGetDevice(&device));
    allow_dynamic_shared<ccq_tilde_kernel<T>>(tilde_bytes, device);
    ccq_tilde_kernel<T><<<per_chunk, threads, tilde_bytes, st>>>(cw, ws, a.ccq.lambda);
    check_launch("backward ccq_tilde_kernel");
  }

  // The rule with q̃: queries and keys per value head.
  work wq = wm;
  wq.q = cw.qt, wq.k = cw.kv, wq.H = HV, wq.G = 1;
  constexpr bool channels = Rule::update::inputs == (input::b | input::w);  // GDN-2 (channel_gates.hpp)
  chunk_phases<erases, decays, per_key, channels>(wq, a.initial_state, g.d_final_state, g.d_initial_state, g.dv, st,
                                                  cg, cd);

  if (NC) {
    ccq_direct_kernel<T><<<per_chunk, threads, 0, st>>>(cw, wm.dq, a.ccq.lambda, g.dlambda);
    check_launch("backward ccq_direct_kernel");
  }
  // Phase 1 also seeds the reverse pass with its state-free products s Pᵀ dO and s (Γ ⊙ Q)ᵀ dO (chunk_prep_kernel);
  // the statistics pass's d_o is dY, known only now, so its phase 1 runs again before its reverse pass.
  prep_phase<false, false>(ws, st);
  state_phases<false, false>(ws, {}, {}, transposed_last(dM0), false, true, st);
  grad_phase<false, true, false>(ws, contiguous<4>(cw.dkv, {B, wm.T, HV, K}), st);
  if (wm.N) {
    ccq_mean_adjoint_kernel<><<<per_seq, max_kv, 0, st>>>(cw, ws.dk);
    check_launch("backward ccq_mean_adjoint_kernel");
  }
  if (NC) {
    ccq_dots_kernel<><<<per_chunk, threads, 0, st>>>(cw, ws.dk);
    check_launch("backward ccq_dots_kernel");
  }
  if (wm.N) {
    ccq_count_adjoint_kernel<><<<per_seq, max_kv, 0, st>>>(cw, g.dC0, g.dm0, g.dz0);
    check_launch("backward ccq_count_adjoint_kernel");
  }
  if (NC) {
    ccq_finish_kernel<T><<<per_chunk, threads, 0, st>>>(cw, wm, ws, from, g.dccq_log_decay);
    check_launch("backward ccq_finish_kernel");
  }
}

}  // namespace linea::cuda_detail::bwd
