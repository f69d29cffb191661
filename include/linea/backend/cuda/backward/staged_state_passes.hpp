// linea/backend/cuda/backward/staged_state_passes.hpp — phases 2 and 3, the only work sequential over chunks. The
// transition of a chunk acts on the key dimension only, so value columns are independent: one CTA per
// (BV value columns, value head, sequence) walks the chunks of its sequence (docs/math/backward.md §6).
// The two passes are independent of each other (the reverse pass needs no h): both read only phase 1's factors,
// which include the state-free halves of the reverse pass (s Pᵀ dO in dU's workspace, Y in dh's).
// Every state-free operand is in shared memory before the product that reads it: a chunk's operands are two cp.async
// groups issued one product ahead (the earlier passes fetched W, k, U through block_gemm's slabs, a global round
// trip behind a barrier per slab, ≈ 16 per chunk, on the critical path of a chain of up to 512 chunks):
//
//   forward   group A(c) = G_c, W_c, U_c (V_c)    lands during product 2 of chunk c − 1
//             group B(c) = k_c                     lands during product 1 of chunk c
//     product 1   U_new = U − W h                  (A(c); erasing updates; U_new = V otherwise)
//     product 2   h ← γ_L h + (F ⊙ K)ᵀ U_new       (B(c))
//   reverse   group A(c) = G_c, k_c, s Pᵀ dO       lands during product 2 of chunk c + 1
//             group B(c) = W_c                     lands during product 1 of chunk c
//     product 1   dU = s Pᵀ dO + (F ⊙ K) dh        (A(c))
//     product 2   dh ← γ_L dh − Wᵀ dU + Y          (B(c); Y = s (Γ ⊙ Q)ᵀ dO, phase 1's, read into registers at
//                                                   the chunk's start by the threads that then store dh over it)
//
// so the chain waits on the state alone. Per-key decays (PerKey) read phase 1's Kd_s = k_s ⊙ exp(G_L − G_s) in
// place of F ⊙ K and multiply by the vector gL = exp(G_L) in place of γ_L (Y = s Qgᵀ dO).
// The products run from shared memory (block_gemm_direct, no barriers inside); rows are padded so that every
// fragment read is conflict-free (row-wise A: ≡ 4 (mod 32) floats; transposed A and B: ≡ 8).
// One CTA per (BV value columns, value head, sequence), where that fills the GPU
// BV = 128 forward (one CTA per (head, sequence), 209 KB, one per SM) and 64 reverse (Y takes 32 registers a thread;
// 64 at 128 columns spilled), else 16 (two per SM; phases.hpp chooses).
// (16-bit inputs with scalar decays take state_passes16.hpp's passes instead: phases.hpp's state_phases.)
#pragma once
#include "async_copy.hpp"
#include "block_gemm.hpp"

namespace linea::cuda_detail::bwd {

template <int BV_>
struct staged_shape {
  static constexpr int BV = BV_, LDB = BV + 8;              // state and value tiles: ≡ 8 (mod 32)
  static constexpr int ld_row = ld_kv, ld_col = max_kv + 8;  // [CL][K] tiles read row-wise / transposed
  static constexpr int TN = BV < 64 ? BV : 64;               // block_gemm_direct's tile width
  static constexpr int ctas_per_sm = BV <= 32 ? 2 : 1;  // (32 columns: 112 KB, two fit)
  static constexpr int s_at = 0, u_at = s_at + max_kv * LDB, in_at = u_at + CL * LDB, w_at = in_at + CL * LDB,
                       k_at = w_at + CL * ld_col, g_at = k_at + CL * ld_col, f_at = g_at + 2 * max_kv,
                       end = f_at + CL;
  static constexpr std::size_t bytes = sizeof(float) * end;
  static_assert(ctas_per_sm * (bytes + 1024) <= 228 * 1024, "staged state passes: the CTAs per SM must fit");
};
// (both [CL][K] tiles are sized ld_col ≥ ld_row: the passes read one row-wise and the other transposed; the decay
// buffers hold G_c twice (scalar decays) or gL_c twice (per-key decays), for chunks c and c ± 1)

// The chunk's decays from its G (in shared memory): sF_r = exp(G_L − G_r) for r < L, and returns γ_L = exp(G_L).
__device__ __forceinline__ float staged_decays(const float* G, int L, float* sF) {
  if (threadIdx.x < CL) sF[threadIdx.x] = int(threadIdx.x) < L ? __expf(G[L - 1] - G[threadIdx.x]) : 0.f;
  return __expf(G[L - 1]);
}

template <int BV_, bool Erases, bool PerKey, precision Prec>
__global__ void __launch_bounds__(threads, staged_shape<BV_>::ctas_per_sm)
    staged_forward_states_kernel(const work w, const view<const float, 4> S0) {
  using sh = staged_shape<BV_>;
  constexpr int BV = sh::BV, LDB = sh::LDB;
  const index_t jt = index_t(blockIdx.x) * BV, hv = blockIdx.y, n = blockIdx.z, h = hv / w.G;
  const int K = int(w.K), bv = int(w.V - jt < BV ? w.V - jt : BV), tid = threadIdx.x;
  extern __shared__ __align__(16) float sm[];
  float *sS = sm + sh::s_at, *sU = sm + sh::u_at, *sIn = sm + sh::in_at, *sW = sm + sh::w_at, *sK = sm + sh::k_at,
        *sG = sm + sh::g_at, *sF = sm + sh::f_at;
  const seq_chunks sc = w.seqs[n];
  const index_t end = sc.first + sc.count;
  const auto fetch_a = [&](index_t c, const chunk_info& ci) {  // G_c (gL_c); W_c and U_c, or V_c
    if (c < end) {
      if constexpr (PerKey) async_tile<1, max_kv>(sG + (c & 1) * max_kv, max_kv, w.gL + w.ch(c, hv) * w.K, 0, 1, K);
      else async_tile<1, CL>(sG + (c & 1) * CL, CL, w.Gc + w.ch(c, hv) * CL, 0, 1, CL);
      if constexpr (Erases) {
        async_tile<CL, max_kv>(sW, sh::ld_row, w.W + w.ch(c, hv) * CL * w.K, w.K, ci.len, K);
        async_tile<CL, BV>(sIn, LDB, w.U + w.ch(c, hv) * CL * w.V + jt, w.V, ci.len, bv);
      } else {
        async_tile<CL, BV>(sIn, LDB, w.v + (w.token(ci.bt, ci.t0) * w.HV + hv) * w.V + jt, w.HV * w.V, ci.len, bv);
      }
    }
    async_commit();
  };
  const auto fetch_b = [&](index_t c, const chunk_info& ci) {  // k_c (Kd_c)
    if (c < end) {
      if constexpr (PerKey) async_tile<CL, max_kv>(sK, sh::ld_col, w.Kd + w.ch(c, hv) * CL * w.K, w.K, ci.len, K);
      else async_tile<CL, max_kv>(sK, sh::ld_col, w.k + (w.token(ci.bt, ci.t0) * w.H + h) * w.K, w.H * w.K, ci.len, K);
    }
    async_commit();
  };

  for (int e = tid; e < K * BV; e += threads) {
    const int d = e / BV, j = e % BV;
    sS[d * LDB + j] = S0.ptr && j < bv ? S0(n, hv, d, jt + j) : 0.f;
  }
  chunk_info cur{};
  if (sc.count) cur = w.chunk[sc.first];
  fetch_a(sc.first, cur);
  fetch_b(sc.first, cur);
  for (index_t c = sc.first; c < end; ++c) {
    const chunk_info next = c + 1 < end ? w.chunk[c + 1] : chunk_info{};  // (used after product 1)
    const int L = cur.len;
    async_wait<1>();  // A(c)
    __syncthreads();
    const float* gLk = sG + (c & 1) * max_kv;  // (per-key decays)
    const float gL = PerKey ? 0.f : staged_decays(sG + (c & 1) * CL, L, sF);
    float* hc = w.h + w.ch(c, hv) * w.K * w.V + jt;  // h_c for phase 4
    for (int e = tid; e < K * BV; e += threads) {
      const int d = e / BV, j = e % BV;
      if (j < bv) hc[d * w.V + j] = sS[d * LDB + j];
    }
    if constexpr (Erases) {  // U_new = U − W h
      float* Un = w.U_new + w.ch(c, hv) * CL * w.V + jt;
      block_gemm_direct<Prec, sh::TN, direct_unroll<Erases, PerKey>>(
          L, bv, K, [&](int r, int d) { return sW[r * sh::ld_row + d]; }, [&](int d, int j) { return sS[d * LDB + j]; },
          [&](int r, int j, float acc) {
            const float x = sIn[r * LDB + j] - acc;
            sU[r * LDB + j] = x, Un[r * w.V + j] = x;
          });
    } else {  // U_new = V
      for (int e = tid; e < CL * BV; e += threads) sU[(e / BV) * LDB + e % BV] = sIn[(e / BV) * LDB + e % BV];
      __syncthreads();
    }
    fetch_a(c + 1, next);  // (W, U, V and the other G buffer are free: product 1 ended with a barrier)
    async_wait<1>();       // B(c); block_gemm_direct's first barrier makes every thread's copies visible
    block_gemm_direct<Prec, sh::TN, direct_unroll<Erases, PerKey>>(
        K, bv, L, [&](int d, int s) { return PerKey ? sK[s * sh::ld_col + d] : sK[s * sh::ld_col + d] * sF[s]; },
        [&](int s, int j) { return sU[s * LDB + j]; },
        [&](int d, int j, float acc) { sS[d * LDB + j] = fmaf(PerKey ? gLk[d] : gL, sS[d * LDB + j], acc); });
    fetch_b(c + 1, next);
    cur = next;
  }
  async_wait<0>();
}

template <int BV_, bool Erases, bool PerKey, precision Prec>
__global__ void __launch_bounds__(threads, staged_shape<BV_>::ctas_per_sm)
    staged_reverse_states_kernel(const work w, const view<const float, 4> dST, const view<float, 4> dS0) {
  using sh = staged_shape<BV_>;
  constexpr int BV = sh::BV, LDB = sh::LDB, per = max_kv * BV / threads;  // dh elements a thread owns
  static_assert(max_kv * BV % threads == 0, "staged reverse pass: whole dh elements per thread");
  const index_t jt = index_t(blockIdx.x) * BV, hv = blockIdx.y, n = blockIdx.z, h = hv / w.G;
  const int K = int(w.K), bv = int(w.V - jt < BV ? w.V - jt : BV), tid = threadIdx.x;
  extern __shared__ __align__(16) float sm[];
  float *sD = sm + sh::s_at, *sU = sm + sh::u_at, *sIn = sm + sh::in_at, *sW = sm + sh::w_at, *sK = sm + sh::k_at,
        *sG = sm + sh::g_at, *sF = sm + sh::f_at;
  const seq_chunks sc = w.seqs[n];
  const index_t first = sc.first;
  const auto fetch_a = [&](index_t c, const chunk_info& ci) {  // G_c, k_c (gL_c, Kd_c), and phase 1's s Pᵀ dO
    if (c >= first) {
      if constexpr (PerKey) {
        async_tile<1, max_kv>(sG + (c & 1) * max_kv, max_kv, w.gL + w.ch(c, hv) * w.K, 0, 1, K);
        async_tile<CL, max_kv>(sK, sh::ld_row, w.Kd + w.ch(c, hv) * CL * w.K, w.K, ci.len, K);
      } else {
        async_tile<1, CL>(sG + (c & 1) * CL, CL, w.Gc + w.ch(c, hv) * CL, 0, 1, CL);
        async_tile<CL, max_kv>(sK, sh::ld_row, w.k + (w.token(ci.bt, ci.t0) * w.H + h) * w.K, w.H * w.K, ci.len, K);
      }
      async_tile<CL, BV>(sIn, LDB, w.dU + w.ch(c, hv) * CL * w.V + jt, w.V, ci.len, bv);
    }
    async_commit();
  };
  const auto fetch_b = [&](index_t c, const chunk_info& ci) {  // W_c
    if (Erases && c >= first) async_tile<CL, max_kv>(sW, sh::ld_col, w.W + w.ch(c, hv) * CL * w.K, w.K, ci.len, K);
    async_commit();
  };
  // element i of this thread: e = tid + i · threads of the [K][BV] tile, (d, j) = (e / BV, e % BV)
  for (int e = tid; e < K * BV; e += threads) {
    const int d = e / BV, j = e % BV;
    sD[d * LDB + j] = dST.ptr && j < bv ? dST(n, hv, d, jt + j) : 0.f;
  }
  const index_t last = sc.first + sc.count - 1;
  chunk_info cur{};
  if (sc.count) cur = w.chunk[last];
  fetch_a(last, cur);
  fetch_b(last, cur);
  for (index_t c = last; c >= first; --c) {
    const chunk_info prev = c > first ? w.chunk[c - 1] : chunk_info{};  // (used after product 1)
    const int L = cur.len;
    float* dhc = w.dh + w.ch(c, hv) * w.K * w.V + jt;
    // Y = s (Γ ⊙ Q)ᵀ dO (phase 1's, in dh's slot of this chunk): read before this thread stores dh over the same
    // elements, and added after product 2
    float y[per];
#pragma unroll
    for (int i = 0; i < per; ++i) {
      const int e = tid + i * threads, d = e / BV, j = e % BV;
      y[i] = d < K && j < bv ? dhc[d * w.V + j] : 0.f;
    }
    async_wait<1>();  // A(c)
    __syncthreads();
    const float* gLk = sG + (c & 1) * max_kv;  // (per-key decays)
    const float gL = PerKey ? 0.f : staged_decays(sG + (c & 1) * CL, L, sF);
#pragma unroll
    for (int i = 0; i < per; ++i) {  // dh at the chunk's end, for phase 4
      const int e = tid + i * threads, d = e / BV, j = e % BV;
      if (d < K && j < bv) dhc[d * w.V + j] = sD[d * LDB + j];
    }
    // dU = s Pᵀ dO + (F ⊙ K) dh
    float* dU = w.dU + w.ch(c, hv) * CL * w.V + jt;
    block_gemm_direct<Prec, sh::TN, direct_unroll<Erases, PerKey>>(
        L, bv, K, [&](int s, int d) { return PerKey ? sK[s * sh::ld_row + d] : sK[s * sh::ld_row + d] * sF[s]; },
        [&](int d, int j) { return sD[d * LDB + j]; },
        [&](int s, int j, float acc) {
          const float x = sIn[s * LDB + j] + acc;
          sU[s * LDB + j] = x, dU[s * w.V + j] = x;
        });
    fetch_a(c - 1, prev);  // (k, s Pᵀ dO and the other G buffer are free: product 1 ended with a barrier)
    if constexpr (Erases) {  // dh ← γ_L dh − Wᵀ dU
      async_wait<1>();       // B(c)
      block_gemm_direct<Prec, sh::TN, direct_unroll<Erases, PerKey>>(
          K, bv, L, [&](int d, int s) { return sW[s * sh::ld_col + d]; }, [&](int s, int j) { return sU[s * LDB + j]; },
          [&](int d, int j, float acc) { sD[d * LDB + j] = fmaf(PerKey ? gLk[d] : gL, sD[d * LDB + j], -acc); });
    }
#pragma unroll
    for (int i = 0; i < per; ++i) {  // dh ← (γ_L dh) + Y
      const int e = tid + i * threads, d = e / BV, j = e % BV;
      if (d < K) sD[d * LDB + j] = (Erases ? sD[d * LDB + j] : (PerKey ? gLk[d] : gL) * sD[d * LDB + j]) + y[i];
    }
    __syncthreads();  // (orders the update of dh before the next chunk's reads, and W's reads before B(c − 1))
    fetch_b(c - 1, prev);
    cur = prev;
  }
  async_wait<0>();
  if (dS0.ptr)
    for (int e = tid; e < K * BV; e += threads) {
      const int d = e / BV, j = e % BV;
      if (j < bv) dS0(n, hv, d, jt + j) = sD[d * LDB + j];
    }
}

}  // namespace linea::cuda_detail::bwd
