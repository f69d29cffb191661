// linea/backend/cuda/normalize_backward.hpp — the CUDA backward of `normalize` (the additive rule, identity read),
// wrapped around the plain chunkwise backward (docs/math/backward.md §2 and §6, "normalize on CUDA"):
//
//   o_t = r_t / den_t,   r_t = S_tᵀ(s q̂_t),   den_t = s q̂_t·z_t + 1e-10,   z_t = Σ_{j≤t} k̂_j  (per sequence, z_0 = 0)
//
//   before phases 1–4   den_t per (token, key head), and d_o ← d_o / den_t, so that the plain backward computes the
//                       gradients through r: dv, dS_0, dk̂ through the state, and dq̂_t = s S_t dr_t
//   after them          dden_t = −⟨d_o, r⟩/den² = −(q̂_t·dq̂_t)/den_t, since q̂_t·dq̂_t = r_t·dr_t (no forward output
//                       needed), then  dq̂_t += s dden_t z_t  and  dk̂_j += s Σ_{t≥j} dden_t q̂_t
//
// per value head (w.dq, w.dk, before the input-adjoint kernel sums a group and applies the L2 norm's adjoint; q̂, k̂
// and den belong to the value head's key head). The sequence sums are chunk scans over the backward's chunk table:
// per-chunk totals, an exclusive scan over each sequence's chunks, then a walk over the chunk's tokens. Five small
// launches, O(tokens · (H + HV) · K) work; the scratch (normalizer_floats) is counted in backward_workspace_size.
#pragma once
#include <cstddef>

#include "backward/inputs_kernel.hpp"  // warp_sum
#include "backward/plan.hpp"
#include "check.hpp"

namespace linea::cuda_detail::bwd {

inline constexpr int norm_threads = max_kv;  // one thread per key channel
inline constexpr int norm_warps = norm_threads / 32;

struct normalizer_work {
  float* den = nullptr;   // [tokens, H]      s q̂·z + 1e-10
  float* dden = nullptr;  // [tokens, HV]     dL/d den, per value head
  float* zsum = nullptr;  // [chunks, H, K]   Σ k̂ over the chunk, then over the earlier chunks of its sequence
  float* qsum = nullptr;  // [chunks, HV, K]  s Σ dden q̂ over the chunk, then over the later chunks
};

inline std::size_t normalizer_floats(const backward_plan& p) {
  const std::size_t tokens = std::size_t(p.tokens), chunks = p.chunks.size(), H = std::size_t(p.H),
                    HV = std::size_t(p.HV), K = std::size_t(p.K);
  return slot_round(tokens * H) + slot_round(tokens * HV) + slot_round(chunks * H * K) + chunks * HV * K;
}

// zsum[c, h] = Σ_{t in chunk c} k̂_t (key head h).
template <class = void>  // templates: one definition across the TUs that include this header
__global__ void __launch_bounds__(norm_threads) norm_chunk_key_sums(const work w, const normalizer_work nw) {
  const index_t c = blockIdx.x, h = blockIdx.y, i = threadIdx.x;
  if (i >= w.K) return;
  const chunk_info ch = w.chunk[c];
  const float* k = w.k + std::size_t((w.token(ch.bt, ch.t0) * w.H + h) * w.K + i);
  float s = 0;
  for (int r = 0; r < ch.len; ++r) s += k[std::size_t(r) * std::size_t(w.H * w.K)];
  nw.zsum[std::size_t((c * w.H + h) * w.K + i)] = s;
}

// x[c, head] ← Σ of x over the chunks of c's sequence before c (reverse: after c). Grid (sequences, heads).
template <bool reverse>
__global__ void __launch_bounds__(norm_threads) norm_scan_chunks(const work w, float* x, index_t heads) {
  const index_t n = blockIdx.x, head = blockIdx.y, i = threadIdx.x;
  if (i >= w.K) return;
  const seq_chunks s = w.seqs[n];
  float run = 0;
  for (index_t j = 0; j < s.count; ++j) {
    const index_t c = reverse ? s.first + s.count - 1 - j : s.first + j;
    float& at = x[std::size_t((c * heads + head) * w.K + i)];
    const float total = at;
    at = run;
    run += total;
  }
}

// den_t = s q̂_t·z_t + 1e-10 for the chunk's tokens (key head h), and d_o_t ← d_o_t / den_t for the group's value heads.
template <class = void>
__global__ void __launch_bounds__(norm_threads) norm_scale_output_grads(const work w, const normalizer_work nw) {
  __shared__ float part[CL][norm_warps];
  __shared__ float den[CL];
  const index_t c = blockIdx.x, h = blockIdx.y;
  const int i = threadIdx.x, warp = i >> 5, lane = i & 31;
  const chunk_info ch = w.chunk[c];
  const index_t t0 = w.token(ch.bt, ch.t0);
  float z = i < w.K ? nw.zsum[std::size_t((c * w.H + h) * w.K + i)] : 0.f;  // Σ k̂ over the earlier chunks
  for (int r = 0; r < ch.len; ++r) {
    float qz = 0;
    if (i < w.K) {
      const std::size_t at = std::size_t(((t0 + r) * w.H + h) * w.K + i);
      z += w.k[at];  // z_t includes k̂_t
      qz = w.q[at] * z;
    }
    qz = warp_sum(qz);
    if (lane == 0) part[r][warp] = qz;
  }
  __syncthreads();
  if (i < ch.len) {
    float d = 0;
    for (int j = 0; j < norm_warps; ++j) d += part[i][j];
    d = w.scale * d + 1e-10f;
    den[i] = d;
    nw.den[std::size_t((t0 + i) * w.H + h)] = d;
  }
  __syncthreads();
  const index_t GV = w.G * w.V;  // the value heads h·G … h·G + G − 1 are contiguous in d_o's row
  for (index_t e = i; e < ch.len * GV; e += norm_threads) {
    const index_t r = e / GV;
    w.d_o[std::size_t(((t0 + r) * w.HV + h * w.G) * w.V + e % GV)] /= den[r];
  }
}

// dden_t = −(q̂_t·dq̂_t)/den_t per value head, and the chunk's total qsum[c, hv] = s Σ_t dden_t q̂_t.
template <class = void>
__global__ void __launch_bounds__(norm_threads) norm_coefficients(const work w, const normalizer_work nw) {
  __shared__ float part[CL][norm_warps];
  __shared__ float dden[CL];
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / w.G;
  const int i = threadIdx.x, warp = i >> 5, lane = i & 31;
  const chunk_info ch = w.chunk[c];
  const index_t t0 = w.token(ch.bt, ch.t0);
  for (int r = 0; r < ch.len; ++r) {
    float x = 0;
    if (i < w.K) x = w.q[std::size_t(((t0 + r) * w.H + h) * w.K + i)] * w.dq[std::size_t(((t0 + r) * w.HV + hv) * w.K + i)];
    x = warp_sum(x);
    if (lane == 0) part[r][warp] = x;
  }
  __syncthreads();
  if (i < ch.len) {
    float x = 0;
    for (int j = 0; j < norm_warps; ++j) x += part[i][j];
    const float d = -x / nw.den[std::size_t((t0 + i) * w.H + h)];
    dden[i] = d;
    nw.dden[std::size_t((t0 + i) * w.HV + hv)] = d;
  }
  __syncthreads();
  if (i >= w.K) return;
  float y = 0;
  for (int r = 0; r < ch.len; ++r) y += dden[r] * w.q[std::size_t(((t0 + r) * w.H + h) * w.K + i)];
  nw.qsum[std::size_t((c * w.HV + hv) * w.K + i)] = w.scale * y;
}

// dq̂_t += s dden_t z_t (z walked forward from the earlier chunks' sum), dk̂_t += s Σ_{t' ≥ t} dden_t' q̂_t' (walked
// backward from the later chunks' sum).
template <class = void>
__global__ void __launch_bounds__(norm_threads) norm_adjoint(const work w, const normalizer_work nw) {
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / w.G, i = threadIdx.x;
  if (i >= w.K) return;
  const chunk_info ch = w.chunk[c];
  const index_t t0 = w.token(ch.bt, ch.t0);
  const auto key = [&](int r) { return std::size_t(((t0 + r) * w.H + h) * w.K + i); };
  const auto value = [&](int r) { return std::size_t(((t0 + r) * w.HV + hv) * w.K + i); };
  const float* dden = nw.dden + std::size_t(t0 * w.HV + hv);
  float z = nw.zsum[std::size_t((c * w.H + h) * w.K + i)];
  for (int r = 0; r < ch.len; ++r) {
    z += w.k[key(r)];
    w.dq[value(r)] += w.scale * dden[std::size_t(r) * std::size_t(w.HV)] * z;
  }
  float acc = nw.qsum[std::size_t((c * w.HV + hv) * w.K + i)];
  for (int r = ch.len - 1; r >= 0; --r) {
    acc += w.scale * dden[std::size_t(r) * std::size_t(w.HV)] * w.q[key(r)];
    w.dk[value(r)] += acc;
  }
}

// The scratch at `at` (normalizer_floats(plan) floats); den_t computed and d_o divided by it, in w's workspace.
// Runs after phase 0 (inputs_kernel: q̂, k̂, d_o in w) and before phases 1–4.
inline normalizer_work normalize_before(const work& w, const backward_plan& plan, unsigned char* at, cudaStream_t st) {
  normalizer_work nw;
  float* f = reinterpret_cast<float*>(at);
  const std::size_t tokens = std::size_t(plan.tokens), chunks = plan.chunks.size(), K = std::size_t(w.K);
  nw.den = f, f += slot_round(tokens * std::size_t(w.H));  // (every slot slot_bytes aligned, as plan.hpp's)
  nw.dden = f, f += slot_round(tokens * std::size_t(w.HV));
  nw.zsum = f, f += slot_round(chunks * std::size_t(w.H) * K);
  nw.qsum = f;
  if (chunks == 0 || w.K == 0) return nw;
  const dim3 key_heads(unsigned(chunks), unsigned(w.H));
  norm_chunk_key_sums<><<<key_heads, norm_threads, 0, st>>>(w, nw);
  check_launch("backward norm_chunk_key_sums");
  norm_scan_chunks<false><<<dim3(unsigned(plan.seqs.size()), unsigned(w.H)), norm_threads, 0, st>>>(w, nw.zsum, w.H);
  check_launch("backward norm_scan_chunks");
  norm_scale_output_grads<><<<key_heads, norm_threads, 0, st>>>(w, nw);
  check_launch("backward norm_scale_output_grads");
  return nw;
}

// After phases 1–4 (w.dq, w.dk per value head), before the input-adjoint kernel: the normaliser's terms added in.
inline void normalize_after(const work& w, const backward_plan& plan, const normalizer_work& nw, cudaStream_t st) {
  const std::size_t chunks = plan.chunks.size();
  if (chunks == 0 || w.K == 0) return;
  const dim3 value_heads(unsigned(chunks), unsigned(w.HV));
  norm_coefficients<><<<value_heads, norm_threads, 0, st>>>(w, nw);
  check_launch("backward norm_coefficients");
  norm_scan_chunks<true><<<dim3(unsigned(plan.seqs.size()), unsigned(w.HV)), norm_threads, 0, st>>>(w, nw.qsum, w.HV);
  check_launch("backward norm_scan_chunks");
  norm_adjoint<><<<value_heads, norm_threads, 0, st>>>(w, nw);
  check_launch("backward norm_adjoint");
}

}  // namespace linea::cuda_detail::bwd
