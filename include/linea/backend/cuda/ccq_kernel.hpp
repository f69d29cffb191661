// linea/backend/cuda/ccq_kernel.hpp — the CCQ read's cleaned queries (SPEC §3), given Y_t = C_t q̂_t.
//
// The CUDA backend runs the CCQ read as three launches of one form: (1) the stats pass, the form's own kernel
// with values := keys and decay c_t, giving Y_t = C_t q̂_t and the final C; (2) this kernel, which scans
// m_t = a_t m_{t-1} + k̂_t and z_t = a_t z_{t-1} + 1 and forms
//     q̃_t = q̂_t − λ_t (Y_t / z_t − m_t (m_tᵀ q̂_t) / z_t²);
// (3) the main pass, reading with q̃ in place of q. The write path never sees any of this.
// The chunkwise form with 16-bit inputs takes ccq_chunked.hpp instead (chunk-parallel m, z; both passes on the
// 64-token kernels); this is the path of the recurrent form, the decode step, float32 inputs and the rest.
//
// One block per (sequence, value head); tokens go in tiles of 32: a warp per token for the row sums (L2 norms,
// mean decay, m_tᵀ q̂_t), a thread per key channel for the scan over the tile.
#pragma once
#include "source.hpp"

namespace linea::cuda_detail {

constexpr int ccq_threads = 256, ccq_tile = 32;

template <class T>
struct ccq_args {
  kernel_args<T> a;                 // the call's inputs (q, k, gates, sizes, stats decay options)
  view<const T, 3> lambda;
  view<const float, 3> m0;          // [N, HV, K]
  view<const float, 2> z0;          // [N, HV]
  view<float, 3> m;
  view<float, 2> z;
  view<T, 4> q_tilde_out;           // optional [B, T, HV, K]
  view<float, 4> q_tilde;           // scratch for the main pass [B, T, HV, K]
};

template <class Rule, class T>
__global__ void __launch_bounds__(ccq_threads) ccq_query_kernel(const ccq_args<T> c) {
  const kernel_args<T>& a = c.a;
  const source<T> src{a};
  const index_t K = a.K, hv = blockIdx.x, n = blockIdx.y;
  const seq_range seq = sequence_of(a, n);
  if (seq.row < 0) {  // a padded decode row: its q̃ zeroed like its o (core/epilogue.hpp's zero_skipped_row)
    if (c.q_tilde_out.ptr)
      for (index_t t = seq.t0; t < seq.t1; ++t)
        for (index_t i = threadIdx.x; i < K; i += blockDim.x) c.q_tilde_out(seq.bt, t, hv, i) = from_float<T>(0.f);
    return;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;

  extern __shared__ float smem[];
  float* Qc = smem;              // q̂ [tile][K]
  float* Kc = Qc + ccq_tile * K; // k̂
  float* Mc = Kc + ccq_tile * K; // m_t
  __shared__ float decay[ccq_tile], lam[ccq_tile], zc[ccq_tile];

  // m and z of this thread's channels (z is kept by every thread: it is one scalar recurrence).
  constexpr int per_thread = 2;  // K ≤ ccq_threads · per_thread
  float m[per_thread];
  for (int u = 0; u < per_thread; ++u) {
    const index_t i = threadIdx.x + u * blockDim.x;
    m[u] = (i < K && c.m0.ptr) ? c.m0(seq.row, hv, i) : 0.f;
  }
  float z = c.z0.ptr ? c.z0(seq.row, hv) : 0.f;

  for (index_t t0 = seq.t0; t0 < seq.t1; t0 += ccq_tile) {
    const int L = static_cast<int>((seq.t1 - t0 < ccq_tile ? seq.t1 - t0 : index_t(ccq_tile)));
    // ---- rows: q̂, k̂, c_t, λ_t --------------------------------------------------------------------------
    for (int r = warp; r < L; r += warps) {
      const index_t t = t0 + r;
      using Decay = typename Rule::decay;
      float qq = 0, kk = 0, gs = 0;
      const token_scalars ts = src.template scalars<Decay::inputs>(seq.bt, t, hv);  // the rule's decay only
      for (index_t i = lane; i < K; i += 32) {
        const float qi = src.q(seq.bt, t, hv, i), ki = src.k(seq.bt, t, hv, i);
        Qc[r * K + i] = qi, Kc[r * K + i] = ki;
        qq += qi * qi, kk += ki * ki;
        if constexpr (Decay::kind == decay_kind::per_key) gs += src.template log_alpha<Rule>(ts, seq.bt, t, hv, i);
      }
      for (int o = 16; o > 0; o >>= 1) {
        qq += __shfl_xor_sync(0xffffffffu, qq, o);
        kk += __shfl_xor_sync(0xffffffffu, kk, o);
        gs += __shfl_xor_sync(0xffffffffu, gs, o);
      }
      const float qn = src.q_normalised() ? rsqrtf(qq + 1e-6f) : 1.f, kn = a.l2k ? rsqrtf(kk + 1e-6f) : 1.f;
      for (index_t i = lane; i < K; i += 32) Qc[r * K + i] *= qn, Kc[r * K + i] *= kn;
      if (lane == 0) {
        float rule = 0;
        // the default c_t: the rule's log decay, averaged over key channels for a per-key decay (SPEC §3)
        if constexpr (Decay::kind == decay_kind::scalar) rule = src.template log_alpha<Rule>(ts, seq.bt, t, hv, 0);
        if constexpr (Decay::kind == decay_kind::per_key) rule = gs / static_cast<float>(K);
        decay[r] = expf(src.stats_log_decay(seq.bt, t, hv, rule));
        lam[r] = to_float(c.lambda(seq.bt, t, hv));
      }
    }
    __syncthreads();
    // ---- scan m and z over the tile, a thread per channel ---------------------------------------------------
    for (int r = 0; r < L; ++r) {
      z = decay[r] * z + 1.f;
      for (int u = 0; u < per_thread; ++u) {
        const index_t i = threadIdx.x + u * blockDim.x;
        if (i < K) {
          m[u] = decay[r] * m[u] + Kc[r * K + i];
          Mc[r * K + i] = m[u];
        }
      }
      if (threadIdx.x == 0) zc[r] = z;
    }
    __syncthreads();
    // ---- q̃ = q̂ − λ (Y / z − m (mᵀ q̂) / z²), a warp per token -------------------------------------------
    for (int r = warp; r < L; r += warps) {
      const index_t t = t0 + r;
      float mq = 0;
      for (index_t i = lane; i < K; i += 32) mq += Mc[r * K + i] * Qc[r * K + i];
      for (int o = 16; o > 0; o >>= 1) mq += __shfl_xor_sync(0xffffffffu, mq, o);
      const float iz = inverse_key_weight(zc[r]);  // Σ = 0 where z_t = 0 (z0 < 0), as the reference
      for (index_t i = lane; i < K; i += 32) {
        const float sq = a.y(seq.bt, t, hv, i) * iz - Mc[r * K + i] * mq * iz * iz;
        const float qt = Qc[r * K + i] - lam[r] * sq;
        c.q_tilde(seq.bt, t, hv, i) = qt;
        if (c.q_tilde_out.ptr) c.q_tilde_out(seq.bt, t, hv, i) = from_float<T>(qt);
      }
    }
    __syncthreads();
  }
  for (int u = 0; u < per_thread; ++u) {
    const index_t i = threadIdx.x + u * blockDim.x;
    if (i < K && c.m.ptr) c.m(seq.row, hv, i) = m[u];
  }
  if (threadIdx.x == 0 && c.z.ptr) c.z(seq.row, hv) = z;
}

}  // namespace linea::cuda_detail
