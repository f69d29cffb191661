// linea/backend/cuda/recurrent_kernel.hpp — the token-by-token kernel: the recurrent form and the decode step.
//
// One block per (value-column tile, value head, sequence); thread j owns column j of the K×V state, kept in
// registers (s[i] = S_ij), so the whole step is thread-local once the token's q, k and gates are in shared
// memory (SPEC §2, the same two passes as forms/recurrent_head.hpp):
//   pass 1:  s_i ← α_i s_i,   r = Σ_i b_i k_i s_i,   u_j = w_j v_j − r
//   pass 2:  s_i ← s_i + k_i u_j,   o_j = Σ_i (s q̃_i) s_i
#pragma once
#include "source.hpp"

namespace linea::cuda_detail {

constexpr int recurrent_threads = 64;  // value columns per block

// Sum of x over the block (blockDim.x a multiple of 32); `red` holds 32 floats. Ends with a barrier.
__device__ __forceinline__ float block_sum(float x, float* red) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();  // `red` may still be read from the previous call
  if (lane == 0) red[warp] = x;
  __syncthreads();
  float s = 0;
  for (int i = 0; i < warps; ++i) s += red[i];
  return s;
}

template <class Rule, class T, pass P, int KMAX>
__global__ void __launch_bounds__(recurrent_threads) recurrent_kernel(const kernel_args<T> a) {
  using traits = pass_traits<Rule, P>;
  const source<T> src{a};
  const index_t K = a.K, Vd = traits::stats ? a.K : a.V;  // stats pass: values are the keys
  const index_t hv = blockIdx.y, n = blockIdx.z;
  const index_t j = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool own = j < Vd;
  const seq_range seq = sequence_of(a, n);

  if (seq.row < 0) {  // decode step, skipped row: zero output (and residual), state untouched — as on the CPU
    if (own && !traits::stats) {
      a.o(seq.bt, 0, hv, j) = from_float<T>(0.f);
      if (a.residual.ptr) a.residual(seq.bt, 0, hv, j) = from_float<T>(0.f);
    }
    return;
  }

  __shared__ float qs[KMAX], ks[KMAX], es[KMAX], las[KMAX], ksum[KMAX], red[32];
  __shared__ float sc[4];  // α of a scalar decay; the token's scalar inputs g, β

  // The state column, from the initial state or zero.
  float s[KMAX];
  const view<const float, 4>& s0 = traits::stats ? a.C0 : a.initial_state;
#pragma unroll
  for (int i = 0; i < KMAX; ++i) s[i] = (own && i < K && s0.ptr) ? s0(seq.row, hv, i, j) : 0.f;
  for (index_t i = threadIdx.x; i < K; i += blockDim.x) ksum[i] = 0.f;

  for (index_t t = seq.t0; t < seq.t1; ++t) {
    // ---- load the token: raw q, k, per-key log decay; sums for the L2 norms and the mean decay ----------
    float qq = 0, kk = 0, gsum = 0;
    if (threadIdx.x == 0) {  // the scalar inputs, for every lane's hooks
      // the stats pass needs only the rule's decay (its default c_t)
      const token_scalars ts = src.template scalars<traits::stats ? Rule::decay::inputs : Rule::inputs>(seq.bt, t, hv);
      sc[2] = ts.g, sc[3] = ts.beta;
    }
    __syncthreads();
    const token_scalars ts{sc[2], sc[3]};
    for (index_t i = threadIdx.x; i < K; i += blockDim.x) {
      const float qi = src.q(seq.bt, t, hv, i), ki = src.k(seq.bt, t, hv, i);
      qs[i] = qi, ks[i] = ki;
      qq += qi * qi, kk += ki * ki;
      if constexpr (traits::per_key || traits::stats_mean_gk) {
        const float l = src.template log_alpha<Rule>(ts, seq.bt, t, hv, i);
        las[i] = l;
        gsum += l;
      }
    }
    const bool lq = src.q_normalised(), lk = a.l2k;
    const float qn = lq ? rsqrtf(block_sum(qq, red) + 1e-6f) : 1.f;
    const float kn = lk ? rsqrtf(block_sum(kk, red) + 1e-6f) : 1.f;
    float gmean = 0;
    if constexpr (traits::stats_mean_gk) gmean = block_sum(gsum, red) / static_cast<float>(K);
    if (threadIdx.x == 0) {
      if constexpr (traits::stats) {
        float rule = 0;
        if constexpr (traits::rule_scalar) rule = src.template log_alpha<Rule>(ts, seq.bt, t, hv, 0);
        if constexpr (traits::stats_mean_gk) rule = gmean;
        sc[0] = expf(src.stats_log_decay(seq.bt, t, hv, rule));
      } else if constexpr (traits::scalar) {
        sc[0] = expf(src.template log_alpha<Rule>(ts, seq.bt, t, hv, 0));
      }
    }
    __syncthreads();
    for (index_t i = threadIdx.x; i < K; i += blockDim.x) {
      qs[i] *= qn;
      ks[i] *= kn;
      if constexpr (traits::per_key) las[i] = expf(las[i]);
      if constexpr (traits::erases) es[i] = src.template erase_gate<Rule>(ts, seq.bt, t, hv, i) * ks[i];  // b ⊙ k
    }
    __syncthreads();

    // ---- the step, thread-local over the column ------------------------------------------------------
    const float alpha = traits::scalar ? sc[0] : 1.f;
    float r = 0;
#pragma unroll
    for (int i = 0; i < KMAX; ++i) {
      if (i < K) {
        if constexpr (traits::per_key) s[i] *= las[i];
        else if constexpr (traits::scalar) s[i] *= alpha;
        if constexpr (traits::erases) r += es[i] * s[i];
      }
    }
    float u = 0;
    if (own) {
      if constexpr (traits::stats) u = ks[j];
      else u = src.template write_gate<Rule>(ts, seq.bt, t, hv, j) * src.v(seq.bt, t, hv, j) - r;  // w ⊙ v − r
    }
    float o = 0;
#pragma unroll
    for (int i = 0; i < KMAX; ++i) {
      if (i < K) {
        s[i] += ks[i] * u;
        o += qs[i] * s[i];
      }
    }
    if constexpr (!traits::stats) {
      o *= a.scale;
      if (a.normalize) {  // o_t / (s q_t·z_t + 1e-10), z_t = Σ_{j≤t} k_j
        float qz = 0;
        for (index_t i = threadIdx.x; i < K; i += blockDim.x) {
          ksum[i] += ks[i];
          qz += qs[i] * ksum[i];
        }
        qz = block_sum(qz, red) * a.scale;
        o /= normaliser_divisor(qz);  // core/epilogue.hpp
      }
      if (own) {
        a.o(seq.bt, t, hv, j) = from_float<T>(o);
        if (a.residual.ptr) a.residual(seq.bt, t, hv, j) = from_float<T>(u);
      }
    } else if (own) {
      a.y(seq.bt, t, hv, j) = o;
    }
    __syncthreads();  // the next token overwrites qs, ks, es, las
  }

  const view<float, 4>& s1 = traits::stats ? a.C : a.final_state;
  if (own && s1.ptr) {
#pragma unroll
    for (int i = 0; i < KMAX; ++i)
      if (i < K) s1(seq.row, hv, i, j) = s[i];
  }
}

}  // namespace linea::cuda_detail
