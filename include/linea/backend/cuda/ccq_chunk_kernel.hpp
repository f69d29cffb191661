// linea/backend/cuda/ccq_chunk_kernel.hpp — the CCQ read's running statistics m_t, z_t and cleaned queries q̃_t,
// chunk-parallel (SPEC §3), for the chunkwise form with 16-bit inputs (ccq_chunked.hpp drives them):
//
//   ccq_chunk_kernel<Final = false>  per 64-token chunk: its own decayed sums Δm = Σ_j e^{G_end − G_j} k̂_j, Δz, ΔG
//                                    (and, for the stats pass, c_t and when needed k̂ / q̂ per value head)
//   ccq_carry_kernel                 per (sequence, value head), over its chunks: the values at each chunk's start,
//                                    from m_0, z_0; the final m, z
//   ccq_chunk_kernel<Final = true>   per chunk again: m_t, z_t from the chunk's start values, then
//                                    q̃_t = q̂_t − λ_t (Y_t / z_t − m_t (m_tᵀ q̂_t) / z_t²), in the input type
//
// Y_t = C_t q̂_t comes from the stats pass between the two (a simple_gla read with values := keys, log decay c_t,
// on the 64-token kernel). Every (chunk, value head) is one CTA of 128 threads, block slot · HV + hv: a warp per
// token for the row sums, a thread per key channel for the 64-step scan. Chunks are numbered per sequence; with
// cu_seqlens their offsets come from ccq_chunk_starts_kernel. With l2 norms, c_t and k̂ are rounded to the input
// type as the stats pass reads them, so the statistics and Y weigh the same keys with the same decays.
#pragma once
#include "source.hpp"

namespace linea::cuda_detail {

constexpr int ccq_chunk_threads = 128, ccq_chunk_len = 64;

template <class T>
struct ccq_chunk_args {
  kernel_args<T> a;  // the call's inputs; ccq_decays / ccq_log_decay name the statistics' log decay c_t
  view<const T, 3> lambda;
  view<const float, 3> m0;  // [N, HV, K]
  view<const float, 2> z0;  // [N, HV]
  view<float, 3> m;
  view<float, 2> z;
  view<T, 4> q_tilde_out;  // optional [B, T, HV, K]
  // workspace, contiguous [B, T, HV, K] / [B, T, HV]
  T* qt = nullptr;          // q̂ per value head (when expand_q), then q̃
  const T* y = nullptr;     // Y_t from the stats pass
  T* kexp = nullptr;        // k̂ per value head for the stats and main passes, or null (then k is read as is)
  T* c = nullptr;           // c_t
  float* st = nullptr;      // [slots][HV][K + 2]: Δm, Δz, ΔG of a chunk, then m, z at its start
  int* starts = nullptr;    // [N + 1] first chunk of each sequence (cu_seqlens), or null: sequence n has cps
  index_t cps = 0, slots = 0;
  bool expand_q = false;
};

// The offsets of the sequences' chunks (cu_seqlens): starts[n] = Σ_{n' < n} ⌈len_n' / 64⌉. One warp.
template <class T>
__global__ void ccq_chunk_starts_kernel(const kernel_args<T> a, int* starts) {
  const int lane = threadIdx.x & 31;
  int base = 0;
  for (index_t n0 = 0; n0 < a.N; n0 += 32) {
    const index_t n = n0 + lane;
    int count = 0;
    if (n < a.N) {
      const seq_range s = sequence_of(a, n);
      count = static_cast<int>((s.t1 - s.t0 + ccq_chunk_len - 1) / ccq_chunk_len);
    }
    int sum = count;
    for (int o = 1; o < 32; o <<= 1) {
      const int x = __shfl_up_sync(0xffffffffu, sum, o);
      if (lane >= o) sum += x;
    }
    if (n < a.N) starts[n] = base + sum - count;
    base += __shfl_sync(0xffffffffu, sum, 31);
  }
  if (lane == 0) starts[a.N] = base;
}

// Chunk slot c: its sequence n and its place j in it; false when past the last chunk.
template <class T>
__device__ bool ccq_chunk_of(const ccq_chunk_args<T>& c, index_t slot, index_t& n, index_t& j) {
  if (!c.starts) {
    n = slot / c.cps, j = slot % c.cps;
    return n < c.a.N;
  }
  if (slot >= c.starts[c.a.N]) return false;
  index_t lo = 0, hi = c.a.N - 1;  // the last n with starts[n] <= slot (empty sequences before it share its start)
  while (lo < hi) {
    const index_t mid = (lo + hi + 1) / 2;
    if (c.starts[mid] <= slot) lo = mid;
    else hi = mid - 1;
  }
  n = lo, j = slot - c.starts[lo];
  return true;
}

template <class T>
__device__ __forceinline__ float round_to(float x) {
  return to_float(from_float<T>(x));
}

template <class Rule, class T, bool Final>
__global__ void __launch_bounds__(ccq_chunk_threads) ccq_chunk_kernel(const ccq_chunk_args<T> c) {
  const kernel_args<T>& a = c.a;
  const source<T> src{a};
  // One linear grid, value heads fastest: the CTAs in flight read whole token rows [HV][K] of neighbouring chunks.
  // With chunks fastest they read one head's 256-byte slice of every 4 KB row, and both kernels moved data at
  // ~0.5 TB/s (steps 1 and 4 of the read, ncu 2026-12-02) however their loads were scheduled.
  const unsigned heads = static_cast<unsigned>(a.HV);
  const index_t K = a.K, HV = a.HV, hv = blockIdx.x % heads, slot = blockIdx.x / heads;
  index_t n, j;
  if (slot >= c.slots || !ccq_chunk_of(c, slot, n, j)) return;
  const seq_range seq = sequence_of(a, n);
  const index_t t0 = seq.t0 + j * ccq_chunk_len;
  if (t0 >= seq.t1) return;
  const int L = static_cast<int>(seq.t1 - t0 < ccq_chunk_len ? seq.t1 - t0 : index_t(ccq_chunk_len));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = ccq_chunk_threads / 32;
  constexpr int per_lane = 4;  // K ≤ 128

  extern __shared__ float Kc[];  // [64][K]: k̂_t, then (Final) m_t
  __shared__ float decay[ccq_chunk_len], logd[ccq_chunk_len], lam[ccq_chunk_len], zc[ccq_chunk_len];
  auto at = [&](index_t t) { return ((seq.bt * a.T + t) * HV + hv) * K; };  // row of [B, T, HV, K]

  // ---- rows: k̂, c_t (and λ; q̂ per value head for the stats pass), a warp per token ------------------------------
  for (int r = warp; r < L; r += warps) {
    const index_t t = t0 + r;
    using Decay = typename Rule::decay;
    float kk = 0, gs = 0;
    const token_scalars ts = src.template scalars<Decay::inputs>(seq.bt, t, hv);
    for (index_t i = lane; i < K; i += 32) {
      const float ki = src.k(seq.bt, t, hv, i);
      Kc[r * K + i] = ki;
      kk += ki * ki;
      if constexpr (Decay::kind == decay_kind::per_key) gs += src.template log_alpha<Rule>(ts, seq.bt, t, hv, i);
    }
    for (int o = 16; o > 0; o >>= 1) {
      kk += __shfl_xor_sync(0xffffffffu, kk, o);
      gs += __shfl_xor_sync(0xffffffffu, gs, o);
    }
    const float kn = a.l2k ? rsqrtf(kk + 1e-6f) : 1.f;
    for (index_t i = lane; i < K; i += 32) {
      float x = Kc[r * K + i] * kn;
      if (c.kexp) {
        if constexpr (!Final) c.kexp[at(t) + i] = from_float<T>(x);
        x = round_to<T>(x);
      }
      Kc[r * K + i] = x;
    }
    if (lane == 0) {
      float rule = 0;  // the default c_t: the rule's log decay, its mean over key channels when per key (SPEC §3)
      if constexpr (Decay::kind == decay_kind::scalar) rule = src.template log_alpha<Rule>(ts, seq.bt, t, hv, 0);
      if constexpr (Decay::kind == decay_kind::per_key) rule = gs / static_cast<float>(K);
      const float ct = round_to<T>(src.stats_log_decay(seq.bt, t, hv, rule));
      if constexpr (!Final) c.c[(seq.bt * a.T + t) * HV + hv] = from_float<T>(ct);
      if constexpr (Final) lam[r] = to_float(c.lambda(seq.bt, t, hv));
      logd[r] = ct, decay[r] = expf(ct);
    }
    if constexpr (!Final) {
      if (c.expand_q) {
        float qv[per_lane], qq = 0;
        for (int u = 0; u < per_lane; ++u) {
          const index_t i = lane + 32 * u;
          qv[u] = i < K ? src.q(seq.bt, t, hv, i) : 0.f;
          qq += qv[u] * qv[u];
        }
        for (int o = 16; o > 0; o >>= 1) qq += __shfl_xor_sync(0xffffffffu, qq, o);
        const float qn = a.l2q ? rsqrtf(qq + 1e-6f) : 1.f;
        for (int u = 0; u < per_lane; ++u) {
          const index_t i = lane + 32 * u;
          if (i < K) c.qt[at(t) + i] = from_float<T>(qv[u] * qn);
        }
      }
    }
  }
  __syncthreads();

  // ---- the scan over the chunk, a thread per key channel (z and G kept by every thread) ------------------------
  float* st = c.st + (slot * HV + hv) * (K + 2);
  const index_t i = threadIdx.x;
  float m = 0, z = 0, G = 0;
  if constexpr (Final) {
    if (i < K) m = st[i];
    z = st[K];
  }
  for (int r = 0; r < L; ++r) {
    z = decay[r] * z + 1.f;
    G += logd[r];
    if (i < K) {
      m = decay[r] * m + Kc[r * K + i];
      if constexpr (Final) Kc[r * K + i] = m;
    }
    if constexpr (Final)
      if (threadIdx.x == 0) zc[r] = z;
  }
  if constexpr (!Final) {
    if (i < K) st[i] = m;
    if (threadIdx.x == 0) st[K] = z, st[K + 1] = G;
    return;
  } else {
    __syncthreads();
    // ---- q̃ = q̂ − λ (Y / z − m (mᵀ q̂) / z²), a warp per token ---------------------------------------------------
    for (int r = warp; r < L; r += warps) {
      const index_t t = t0 + r, row = at(t);
      float qv[per_lane], qq = 0;
      for (int u = 0; u < per_lane; ++u) {
        const index_t x = lane + 32 * u;
        qv[u] = x >= K ? 0.f : c.expand_q ? to_float(c.qt[row + x]) : src.q(seq.bt, t, hv, x);
        qq += qv[u] * qv[u];
      }
      if (!c.expand_q && a.l2q) {
        for (int o = 16; o > 0; o >>= 1) qq += __shfl_xor_sync(0xffffffffu, qq, o);
        const float qn = rsqrtf(qq + 1e-6f);
        for (int u = 0; u < per_lane; ++u) qv[u] *= qn;
      }
      float mq = 0;
      for (int u = 0; u < per_lane; ++u) {
        const index_t x = lane + 32 * u;
        if (x < K) mq += Kc[r * K + x] * qv[u];
      }
      for (int o = 16; o > 0; o >>= 1) mq += __shfl_xor_sync(0xffffffffu, mq, o);
      const float iz = 1.f / zc[r];
      for (int u = 0; u < per_lane; ++u) {
        const index_t x = lane + 32 * u;
        if (x >= K) continue;
        const float sq = to_float(c.y[row + x]) * iz - Kc[r * K + x] * mq * iz * iz;
        const T q = from_float<T>(qv[u] - lam[r] * sq);
        c.qt[row + x] = q;
        if (c.q_tilde_out.ptr) c.q_tilde_out(seq.bt, t, hv, x) = q;
      }
    }
  }
}

// Per (value head, sequence): each chunk's Δ turned into the values at its start, from m_0, z_0; the final m, z.
template <class T>
__global__ void __launch_bounds__(ccq_chunk_threads) ccq_carry_kernel(const ccq_chunk_args<T> c) {
  const kernel_args<T>& a = c.a;
  const index_t K = a.K, HV = a.HV, hv = blockIdx.x, n = blockIdx.y, i = threadIdx.x;
  const seq_range seq = sequence_of(a, n);
  const index_t len = seq.t1 - seq.t0;
  index_t first = c.starts ? c.starts[n] : n * c.cps;
  index_t last = first + (len + ccq_chunk_len - 1) / ccq_chunk_len;
  if (last > c.slots) last = c.slots;  // device cu_seqlens that overlap: stay inside the workspace
  float m = (i < K && c.m0.ptr) ? c.m0(seq.row, hv, i) : 0.f;
  float z = c.z0.ptr ? c.z0(seq.row, hv) : 0.f;
  constexpr int batch = 8;  // the loads of 8 chunks in flight before their use
  for (index_t s0 = first; s0 < last; s0 += batch) {
    float dm[batch], dz[batch], dg[batch];
#pragma unroll
    for (int b = 0; b < batch; ++b) {
      const float* st = c.st + ((s0 + b) * HV + hv) * (K + 2);
      const bool in = s0 + b < last;
      dm[b] = in && i < K ? st[i] : 0.f;
      dz[b] = in ? st[K] : 0.f;
      dg[b] = in ? st[K + 1] : 0.f;
    }
    __syncthreads();  // every thread read z, G of these chunks before thread 0 overwrites z
#pragma unroll
    for (int b = 0; b < batch; ++b) {
      if (s0 + b >= last) break;
      float* st = c.st + ((s0 + b) * HV + hv) * (K + 2);
      if (i < K) st[i] = m;
      if (i == 0) st[K] = z;
      const float d = expf(dg[b]);
      m = d * m + dm[b], z = d * z + dz[b];
    }
  }
  if (i < K && c.m.ptr) c.m(seq.row, hv, i) = m;
  if (i == 0 && c.z.ptr) c.z(seq.row, hv) = z;
}

}  // namespace linea::cuda_detail
