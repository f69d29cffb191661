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
// on the 64-token kernel). Every (chunk, value head) is one CTA of 128 threads, block slot · HV + hv: 16 threads
// per token for the row sums (eight key channels each, 16-byte loads), a thread per key channel for the 64-step
// scan; the Final launch reads c_t and k̂ back from the first launch's output instead of recomputing them.
// Chunks are numbered per sequence; with cu_seqlens their offsets come from ccq_chunk_starts_kernel. With l2 norms,
// c_t and k̂ are rounded to the input type as the stats pass reads them, so the statistics and Y weigh the same keys
// with the same decays.
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
  // rows read / written with 16-byte accesses: innermost stride 1, the other strides multiples of 8, 16-byte aligned
  bool whole_q = false, whole_k = false, whole_out = false;
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

// ---- 16-bit rows, eight channels per thread -----------------------------------------------------------------
// A token's row of K ≤ 128 channels is read by 16 threads, eight channels each (one 16-byte load where the row is
// contiguous and aligned, eight element loads otherwise); 8 tokens side by side, 8 such passes cover a chunk. Every
// pass's load is issued before the first is used, so a thread has 8 (16 in the q̃ phase) loads in flight — the
// kernels of ccq2 / fwd7 (a warp per token, loads of one token at a time) moved data at ~0.5 TB/s for want of that.
constexpr int ccq_vec = 8, ccq_row_threads = 16, ccq_rows_side_by_side = ccq_chunk_threads / ccq_row_threads;
constexpr int ccq_passes = ccq_chunk_len / ccq_rows_side_by_side;
static_assert(ccq_passes * ccq_rows_side_by_side == ccq_chunk_len && ccq_row_threads * ccq_vec >= 128);

template <class T>
struct ccq_row8 {
  uint4 raw = make_uint4(0, 0, 0, 0);
  __device__ float operator[](int e) const {
    T x[ccq_vec];
    memcpy(x, &raw, sizeof raw);
    return to_float(x[e]);
  }
};
template <class T>
__device__ __forceinline__ ccq_row8<T> ccq_load8(const T* p) {
  return {*reinterpret_cast<const uint4*>(p)};
}
// Eight channels of a strided view's row: the 16-byte load when `whole` (innermost stride 1, aligned), else one by one.
template <class T, class E>
__device__ __forceinline__ ccq_row8<T> ccq_load8(const view<const E, 4>& v, bool whole, index_t b, index_t t, index_t h,
                                                 index_t i) {
  if (whole) return ccq_load8<T>(reinterpret_cast<const T*>(&v(b, t, h, i)));
  T x[ccq_vec];
  for (int e = 0; e < ccq_vec; ++e) x[e] = static_cast<T>(v(b, t, h, i + e));
  ccq_row8<T> r;
  memcpy(&r.raw, x, sizeof x);
  return r;
}
template <class T>
__device__ __forceinline__ void ccq_store8(T* p, const float (&f)[ccq_vec]) {
  T x[ccq_vec];
  for (int e = 0; e < ccq_vec; ++e) x[e] = from_float<T>(f[e]);
  uint4 r;
  memcpy(&r, x, sizeof r);
  *reinterpret_cast<uint4*>(p) = r;
}
// The sum over the 16 threads of a row (lanes 0–15 or 16–31 of a warp); every lane of the warp takes part.
__device__ __forceinline__ float ccq_row_sum(float x) {
  for (int o = ccq_row_threads / 2; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

template <class Rule, class T, bool Final>
__global__ void __launch_bounds__(ccq_chunk_threads) ccq_chunk_kernel(const ccq_chunk_args<T> c) {
  const kernel_args<T>& a = c.a;
  const source<T> src{a};
  using Decay = typename Rule::decay;
  // One linear grid, value heads fastest: the CTAs in flight read whole token rows [HV][K] of neighbouring chunks.
  const unsigned heads = static_cast<unsigned>(a.HV);
  const index_t K = a.K, HV = a.HV, hv = blockIdx.x % heads, slot = blockIdx.x / heads;
  index_t n, j;
  if (slot >= c.slots || !ccq_chunk_of(c, slot, n, j)) return;
  const seq_range seq = sequence_of(a, n);
  const index_t t0 = seq.t0 + j * ccq_chunk_len;
  if (t0 >= seq.t1) return;
  const int L = static_cast<int>(seq.t1 - t0 < ccq_chunk_len ? seq.t1 - t0 : index_t(ccq_chunk_len));
  // this thread: channels [i0, i0 + 8) of the tokens side + 8p (p < 8)
  const int side = threadIdx.x / ccq_row_threads;
  const index_t i0 = static_cast<index_t>(threadIdx.x % ccq_row_threads) * ccq_vec;
  const bool lanes = i0 < K;  // K is a multiple of 8

  extern __shared__ __align__(16) float Kc[];  // [64][K] (read as float4): k̂_t, then (Final) m_t
  __shared__ float decay[ccq_chunk_len], logd[ccq_chunk_len], lam[ccq_chunk_len], zc[ccq_chunk_len],
      gsum[ccq_chunk_len];
  auto at = [&](index_t t) { return ((seq.bt * a.T + t) * HV + hv) * K; };  // row of [B, T, HV, K]
  auto live = [&](int p) { return lanes && side + ccq_rows_side_by_side * p < L; };

  // ---- rows: k̂ into Kc ------------------------------------------------------------------------------------------
  // Final reads k̂ back where the first launch wrote it (kexp: normalised, rounded), else k as is (no L2 norm then).
  ccq_row8<T> kr[ccq_passes];
#pragma unroll
  for (int p = 0; p < ccq_passes; ++p) {
    if (!live(p)) continue;
    const index_t t = t0 + side + ccq_rows_side_by_side * p;
    if (Final && c.kexp) kr[p] = ccq_load8<T>(c.kexp + at(t) + i0);
    else kr[p] = ccq_load8<T>(a.k, c.whole_k, seq.bt, t, hv / a.G, i0);
  }
  if constexpr (!Final) {
    // the per-key rules' default c_t is the mean of the rule's log decay over key channels: partial sums here (gk
    // is read only where that default is used: decayed weighting without the caller's c_t)
    const bool rule_decay = a.ccq_decays && !a.ccq_log_decay.ptr;
    float gs[ccq_passes] = {};
    if constexpr (Decay::kind == decay_kind::per_key) {
#pragma unroll
      for (int p = 0; p < ccq_passes; ++p) {
        if (!rule_decay || !live(p)) continue;
        const index_t t = t0 + side + ccq_rows_side_by_side * p;
        const token_scalars ts = src.template scalars<Decay::inputs>(seq.bt, t, hv);
        for (int e = 0; e < ccq_vec; ++e) gs[p] += src.template log_alpha<Rule>(ts, seq.bt, t, hv, i0 + e);
      }
    }
#pragma unroll
    for (int p = 0; p < ccq_passes; ++p) {
      const int r = side + ccq_rows_side_by_side * p;
      float x[ccq_vec], kk = 0;
      for (int e = 0; e < ccq_vec; ++e) x[e] = kr[p][e], kk += x[e] * x[e];
      if (a.l2k) kk = ccq_row_sum(kk);
      if constexpr (Decay::kind == decay_kind::per_key) {
        if (rule_decay) {
          const float g = ccq_row_sum(gs[p]);
          if (threadIdx.x % ccq_row_threads == 0) gsum[r] = g;
        }
      }
      if (!live(p)) continue;
      const float kn = a.l2k ? rsqrtf(kk + 1e-6f) : 1.f;
      for (int e = 0; e < ccq_vec; ++e) x[e] *= kn;
      if (c.kexp) {
        ccq_store8<T>(c.kexp + at(t0 + r) + i0, x);
        for (int e = 0; e < ccq_vec; ++e) x[e] = round_to<T>(x[e]);
      }
      float* row = Kc + r * K + i0;
      reinterpret_cast<float4*>(row)[0] = make_float4(x[0], x[1], x[2], x[3]);
      reinterpret_cast<float4*>(row)[1] = make_float4(x[4], x[5], x[6], x[7]);
    }
    // q̂ per value head for the stats and main passes (grouped value heads)
    if (c.expand_q) {
      ccq_row8<T> qr[ccq_passes];
#pragma unroll
      for (int p = 0; p < ccq_passes; ++p)
        if (live(p)) qr[p] = ccq_load8<T>(a.q, c.whole_q, seq.bt, t0 + side + ccq_rows_side_by_side * p, hv / a.G, i0);
#pragma unroll
      for (int p = 0; p < ccq_passes; ++p) {
        float x[ccq_vec], qq = 0;
        for (int e = 0; e < ccq_vec; ++e) x[e] = qr[p][e], qq += x[e] * x[e];
        if (a.l2q) qq = ccq_row_sum(qq);
        if (!live(p)) continue;
        const float qn = a.l2q ? rsqrtf(qq + 1e-6f) : 1.f;
        for (int e = 0; e < ccq_vec; ++e) x[e] *= qn;
        ccq_store8<T>(c.qt + at(t0 + side + ccq_rows_side_by_side * p) + i0, x);
      }
    }
    __syncthreads();
    // ---- the tokens' c_t (rounded to T as the stats pass reads it), a thread per token ----------------------------
    if (threadIdx.x < L) {
      const int r = threadIdx.x;
      const index_t t = t0 + r;
      float rule = 0;  // the default c_t: the rule's log decay, its mean over key channels when per key (SPEC §3)
      if constexpr (Decay::kind == decay_kind::scalar) {
        if (rule_decay) {
          const token_scalars ts = src.template scalars<Decay::inputs>(seq.bt, t, hv);
          rule = src.template log_alpha<Rule>(ts, seq.bt, t, hv, 0);
        }
      }
      if constexpr (Decay::kind == decay_kind::per_key)
        if (rule_decay) rule = gsum[r] / static_cast<float>(K);  // gsum is written only then
      const float ct = round_to<T>(src.stats_log_decay(seq.bt, t, hv, rule));
      c.c[(seq.bt * a.T + t) * HV + hv] = from_float<T>(ct);
      logd[r] = ct, decay[r] = expf(ct);
    }
  } else {
#pragma unroll
    for (int p = 0; p < ccq_passes; ++p) {
      if (!live(p)) continue;
      float* row = Kc + (side + ccq_rows_side_by_side * p) * K + i0;
      reinterpret_cast<float4*>(row)[0] = make_float4(kr[p][0], kr[p][1], kr[p][2], kr[p][3]);
      reinterpret_cast<float4*>(row)[1] = make_float4(kr[p][4], kr[p][5], kr[p][6], kr[p][7]);
    }
    // c_t as the first launch wrote it (the same rounded value the stats pass read), and λ_t
    if (threadIdx.x < L) {
      const int r = threadIdx.x;
      const index_t t = t0 + r;
      const float ct = to_float(c.c[(seq.bt * a.T + t) * HV + hv]);
      lam[r] = to_float(c.lambda(seq.bt, t, hv));
      logd[r] = ct, decay[r] = expf(ct);
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
#pragma unroll 8
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
    // ---- q̃ = q̂ − λ (Y / z − m (mᵀ q̂) / z²): every pass's q and Y loads first, then the arithmetic ------------------
    ccq_row8<T> qr[ccq_passes], yr[ccq_passes];
#pragma unroll
    for (int p = 0; p < ccq_passes; ++p) {
      if (!live(p)) continue;
      const index_t t = t0 + side + ccq_rows_side_by_side * p;
      qr[p] = c.expand_q ? ccq_load8<T>(c.qt + at(t) + i0) : ccq_load8<T>(a.q, c.whole_q, seq.bt, t, hv / a.G, i0);
      yr[p] = ccq_load8<T>(c.y + at(t) + i0);
    }
    __syncthreads();  // m_t in Kc, z_t in zc
#pragma unroll
    for (int p = 0; p < ccq_passes; ++p) {
      const int r = side + ccq_rows_side_by_side * p;
      float qv[ccq_vec], qq = 0;
      for (int e = 0; e < ccq_vec; ++e) qv[e] = qr[p][e], qq += qv[e] * qv[e];
      if (!c.expand_q && a.l2q) {
        const float qn = rsqrtf(ccq_row_sum(qq) + 1e-6f);
        for (int e = 0; e < ccq_vec; ++e) qv[e] *= qn;
      }
      const float* mt = Kc + (r < L ? r : 0) * K + (lanes ? i0 : 0);
      float mv[ccq_vec], mq = 0;
      const float4 m0 = reinterpret_cast<const float4*>(mt)[0], m1 = reinterpret_cast<const float4*>(mt)[1];
      mv[0] = m0.x, mv[1] = m0.y, mv[2] = m0.z, mv[3] = m0.w, mv[4] = m1.x, mv[5] = m1.y, mv[6] = m1.z, mv[7] = m1.w;
      if (lanes)
        for (int e = 0; e < ccq_vec; ++e) mq += mv[e] * qv[e];
      mq = ccq_row_sum(mq);
      if (!live(p)) continue;
      const float iz = inverse_key_weight(zc[r]), l = lam[r];  // Σ = 0 where z_t = 0, as the reference
      float out[ccq_vec];
      for (int e = 0; e < ccq_vec; ++e) out[e] = qv[e] - l * (yr[p][e] * iz - mv[e] * mq * iz * iz);
      const index_t t = t0 + r;
      ccq_store8<T>(c.qt + at(t) + i0, out);
      if (c.q_tilde_out.ptr) {
        if (c.whole_out) {
          ccq_store8<T>(&c.q_tilde_out(seq.bt, t, hv, i0), out);
        } else {
          for (int e = 0; e < ccq_vec; ++e) c.q_tilde_out(seq.bt, t, hv, i0 + e) = from_float<T>(out[e]);
        }
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
