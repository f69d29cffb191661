// linea/backend/cuda/backward/state_passes16_ring.hpp — state_passes16.hpp's two passes (same recurrences, same
// arithmetic, same workspace in and out) for narrow value tiles (16 or 32 columns: sequences too few to fill the GPU
// with one CTA per (head, sequence)), with every operand of a chunk fetched a whole chunk ahead.
//
// Why: at 1×32768 the passes are a chain of 512 chunks per CTA, and state_passes16.hpp's single-buffered tiles expose
// two global-memory latencies a chunk (its group A lands behind product 2 only, group B behind product 1 only): ~4 µs
// a chunk forward, ~6 reverse, for ~1 µs of products. Here the float32 operands of a chunk (forward: G, W, U or V,
// k; reverse: G, k, s Pᵀ dO, W) are one cp.async group into one of two stages, issued at the top of the chunk before
// (right after the barrier that frees that stage), so a whole chunk's work covers its latency; the reverse pass also
// loads the next chunk's Y (phase 1's s (Γ ⊙ Q)ᵀ dO, in dh's slot) into registers a chunk ahead. Two barriers a
// chunk instead of three:
//   top      chunk c's group landed; the state's copy written; chunk c − 1's product 2 done (its stage and the
//            product-1 output tile are free) → issue chunk c + 1's group into the other stage
//   middle   product 1's output tile written, the state's copy read → product 2, then the state's new copy
// Two float32 stages (75 KB at 16 columns, 79 KB at 32) take one CTA an SM: state_phases picks these kernels only
// where their CTAs fit in one wave (phases.hpp). Per-key decays (PerKey): state_passes16.hpp's chunk_decays and
// chunk_keys (Kd for k, gL for γ_L).
#pragma once
#include "state_passes16.hpp"

namespace linea::cuda_detail::bwd {

template <int BV_, int Terms_, bool PerKey = false>
struct state16_ring_shape {
  static constexpr int BV = BV_, Terms = Terms_;
  static_assert(BV == 16 || BV == 32, "state16 ring: 16 or 32 value columns (two stages of 64 columns do not fit)");
  static_assert(Terms >= 1 && Terms <= 3, "state16 ring: 1, 2 or 3 bf16 products a step");
  static constexpr int NT1 = BV / 16, NT2 = BV / 8;  // as state16_shape
  static constexpr int ld_row = max_kv + 8, ld_col = max_kv + 4, ld_in = BV + 8, ldb = BV + 8;
  static constexpr int lo = Terms >= 2 ? 1 : 0;
  // one stage of float32 operands, in floats: the [CL][K] tile read row-wise, the one read transposed, the [CL][BV]
  // input, G (gL); two stages
  static constexpr int row_at = 0, col_at = row_at + CL * ld_row, in_at = col_at + CL * ld_col, g_at = in_at + CL * ld_in,
                       stage = g_at + decay_floats<PerKey>, f32_end = 2 * stage;
  // bf16, in elements from f32_end: the state's copy [K][ldb] (hi, lo), product 1's output [CL][ldb] (hi, lo)
  static constexpr int h_at = 0, hl_at = h_at + max_kv * ldb, u_at = hl_at + lo * max_kv * ldb, ul_at = u_at + CL * ldb,
                       b16_end = ul_at + lo * CL * ldb;
  static constexpr std::size_t bytes = sizeof(float) * f32_end + 2 * std::size_t(b16_end);
  static_assert(bytes + 1024 <= 228 * 1024, "state16 ring: one CTA must fit");
  static_assert(stage % 32 == 0, "state16 ring: both stages on the same banks (the conflict-free row strides)");
  static_assert((max_kv * ldb) % 8 == 0 && (CL * ldb) % 8 == 0, "state16 ring: 16-byte aligned tiles");
};

namespace state16_ring_detail {

// async_tile (async_copy.hpp) with the per-piece index arithmetic hoisted: 256 threads over a [Rows][Cols] float32
// tile of 16-byte pieces, Cols / 4 pieces a row dividing 256, so each thread keeps one column and steps down rows
// 256 / (Cols / 4) apart (the narrow passes issue ~17 pieces a thread a chunk, and at 16 columns their arithmetic was
// a large share of the chunk's instructions). The same copies and zeros as async_tile; its 4-byte form where the
// 16-byte conditions fail.
template <int Rows, int Cols>
__device__ __forceinline__ void ring_tile(float* dst, int ld, const float* src, index_t stride, int rows, int cols) {
  constexpr int P = Cols / 4, RS = threads / P;
  static_assert(Cols % 4 == 0 && threads % P == 0 && Rows % RS == 0, "ring_tile: whole row steps");
  const bool wide = cols % 4 == 0 && stride % 4 == 0 && reinterpret_cast<std::uintptr_t>(src) % 16 == 0 && ld % 4 == 0;
  if (!wide) {
    async_tile<Rows, Cols>(dst, ld, src, stride, rows, cols);
    return;
  }
  const int c = 4 * (int(threadIdx.x) % P), r0 = int(threadIdx.x) / P;
  if (c >= cols) return;
  const float* s = src + r0 * stride + c;
  float* d = dst + r0 * ld + c;
#pragma unroll
  for (int i = 0; i < Rows / RS; ++i) {
    const bool in = r0 + RS * i < rows;
    tiles::cp_async16_fill(d + RS * i * ld, in ? s : src, in ? 16 : 0);
    s += RS * stride;
  }
}

// rows d0, d0 + 8, columns 8i + 2q, + 1 of a [K][V] float32 slab at p (the tile's first column): from the state's
// accumulators (Store) or into them; float2 where V is even and p 8-byte aligned (then every pair is), else one
// float at a time. The one-float form is for odd V (a slab's rows alternate in parity). p's alignment is an
// invariant, not a case: plan.hpp starts every slot 16-byte aligned and state_phases throws before launching these
// kernels otherwise (phases.hpp; when slots were laid end to end, odd T · HV left h and dh 4-byte aligned and the
// float2 stores faulted: fuzz case 40 of seed 20261220 and 1303 of 20261207). The test costs one uniform branch, so
// it stays as a second guard.
template <bool Store, int NT>
__device__ __forceinline__ void state_pairs(float (&c)[NT][4], float* p, index_t V, int K, int bv, int d0) {
  const int q = threadIdx.x & 3;
  const bool pairs = V % 2 == 0 && reinterpret_cast<std::uintptr_t>(p) % 8 == 0;
#pragma unroll
  for (int i = 0; i < NT; ++i)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int d = d0 + 8 * half, j = 8 * i + 2 * q;
      float* e = p + d * V + j;
      float &x0 = c[i][2 * half], &x1 = c[i][2 * half + 1];
      if (d < K && j < bv) {
        if (pairs) {
          if constexpr (Store) *reinterpret_cast<float2*>(e) = make_float2(x0, x1);
          else {
            const float2 v = *reinterpret_cast<const float2*>(e);
            x0 = v.x, x1 = v.y;
          }
        } else {
          if constexpr (Store) {
            e[0] = x0;
            if (j + 1 < bv) e[1] = x1;
          } else {
            x0 = e[0], x1 = j + 1 < bv ? e[1] : 0.f;
          }
        }
      } else if constexpr (!Store) {
        x0 = 0.f, x1 = 0.f;
      }
    }
}

}  // namespace state16_ring_detail

template <int BV, bool Erases, int Terms, bool Lean = true, bool PerKey = false>
__global__ void __launch_bounds__(threads, 1)
    state16_ring_forward_kernel(const work w, const view<const float, 4> S0) {
  namespace sd = state16_detail;
  namespace rd = state16_ring_detail;
  using sh = state16_ring_shape<BV, Terms, PerKey>;
  constexpr int NT2 = sh::NT2, LDB = sh::ldb;
  const index_t jt = index_t(blockIdx.x) * BV, hv = blockIdx.y, n = blockIdx.z, h = hv / w.G;
  const int K = int(w.K), bv = int(w.V - jt < BV ? w.V - jt : BV), tid = threadIdx.x, warp = tid >> 5,
            g = (tid & 31) >> 2;
  extern __shared__ __align__(16) float sm[];
  __nv_bfloat16* b16 = reinterpret_cast<__nv_bfloat16*>(sm + sh::f32_end);
  __nv_bfloat16 *sH = b16 + sh::h_at, *sHl = b16 + sh::hl_at, *sU = b16 + sh::u_at, *sUl = b16 + sh::ul_at;
  const seq_chunks sc = w.seqs[n];
  const index_t end = sc.first + sc.count;
  const auto fetch = [&](index_t c, const chunk_info& ci, int s) {  // G_c; W_c and U_c, or V_c; k_c (gL_c, Kd_c): one group
    if (c < end) {
      float* st = sm + s * sh::stage;
      const auto tile = [&]<int Rows, int Cols>(float* dst, int ld, const float* src, index_t stride, int rows, int cols) {
        if constexpr (Lean) rd::ring_tile<Rows, Cols>(dst, ld, src, stride, rows, cols);
        else async_tile<Rows, Cols>(dst, ld, src, stride, rows, cols);
      };
      sd::fetch_decays<PerKey>(st + sh::g_at, w, c, hv);
      if constexpr (Erases) {
        tile.template operator()<CL, max_kv>(st + sh::row_at, sh::ld_row, w.W + w.ch(c, hv) * CL * w.K, w.K, ci.len, K);
        tile.template operator()<CL, BV>(st + sh::in_at, sh::ld_in, w.U + w.ch(c, hv) * CL * w.V + jt, w.V, ci.len, bv);
      } else {
        tile.template operator()<CL, BV>(st + sh::in_at, sh::ld_in,
                                         w.v + (w.token(ci.bt, ci.t0) * w.HV + hv) * w.V + jt, w.HV * w.V, ci.len, bv);
      }
      const sd::key_rows kr = sd::chunk_keys<PerKey>(w, c, ci, hv, h);
      tile.template operator()<CL, max_kv>(st + sh::col_at, sh::ld_col, kr.p, kr.stride, ci.len, K);
    }
    async_commit();
  };
  // (the copies never write columns past K or V: zeros, once, in both stages)
  for (int e = tid; e < sh::f32_end; e += threads) sm[e] = 0.f;
  const int d0 = 16 * warp + g;  // this thread's state rows d0, d0 + 8; columns 8i + 2q, + 1
  float acc[NT2][4];
  sd::load_state(acc, S0, n, hv, jt, K, bv, d0);
  sd::store_state<Terms>(acc, sH, sHl, LDB, d0);
  __syncthreads();  // (the zeros before any copy lands)
  chunk_info cur{}, nxt{};
  if (sc.count) cur = w.chunk[sc.first];
  if (sc.count > 1) nxt = w.chunk[sc.first + 1];
  fetch(sc.first, cur, 0);
  const int ksK = (K + 15) / 16;
  for (index_t c = sc.first; c < end; ++c) {
    const int s = int((c - sc.first) & 1);
    const chunk_info after = c + 2 < end ? w.chunk[c + 2] : chunk_info{};  // (used by the next chunk's fetch)
    const int L = cur.len;
    async_wait<0>();  // chunk c's group
    __syncthreads();  // (every thread's copies; the state's copy; chunk c − 1's product 2 done: its stage is free)
    fetch(c + 1, nxt, s ^ 1);
    const float* st = sm + s * sh::stage;
    const float *sW = st + sh::row_at, *sK = st + sh::col_at, *sIn = st + sh::in_at;
    const sd::chunk_decays<PerKey> dec(st + sh::g_at, L);
    float* hc = w.h + w.ch(c, hv) * w.K * w.V + jt;  // h_c for phase 4, then γ_L h
    if constexpr (Lean) rd::state_pairs<true>(acc, hc, w.V, K, bv, d0);
    sd::carry_state<!Lean>(acc, hc, w.V, K, bv, d0, dec);
    // product 1: U_new = U − W h (stored for phase 4), U_new's copy F ⊙ U_new; or V's copy F ⊙ V
    sd::forward_new_values<sh, Erases>(sW, sIn, sH, sHl, sU, sUl, Erases ? w.U_new + w.ch(c, hv) * CL * w.V + jt : nullptr,
                                       w.V, L, bv, ksK, dec);
    __syncthreads();  // (U_new's copy written; the state's copy read by product 1)
    // product 2: h += Kᵀ (F ⊙ U_new)
    if (16 * warp < K) sd::warp_product<Terms, NT2, false>(acc, sK, sh::ld_col, 16 * warp, sU, sUl, LDB, 0, (L + 15) / 16);
    sd::store_state<Terms>(acc, sH, sHl, LDB, d0);
    cur = nxt;
    nxt = after;
  }
  async_wait<0>();
}

template <int BV, bool Erases, int Terms, bool Lean = true, bool PerKey = false>
__global__ void __launch_bounds__(threads, 1)
    state16_ring_reverse_kernel(const work w, const view<const float, 4> dST, const view<float, 4> dS0) {
  namespace sd = state16_detail;
  namespace rd = state16_ring_detail;
  using sh = state16_ring_shape<BV, Terms, PerKey>;
  constexpr int NT2 = sh::NT2, LDB = sh::ldb;
  const index_t jt = index_t(blockIdx.x) * BV, hv = blockIdx.y, n = blockIdx.z, h = hv / w.G;
  const int K = int(w.K), bv = int(w.V - jt < BV ? w.V - jt : BV), tid = threadIdx.x, warp = tid >> 5,
            lane = tid & 31, g = lane >> 2, q = lane & 3;
  extern __shared__ __align__(16) float sm[];
  __nv_bfloat16* b16 = reinterpret_cast<__nv_bfloat16*>(sm + sh::f32_end);
  __nv_bfloat16 *sH = b16 + sh::h_at, *sHl = b16 + sh::hl_at, *sU = b16 + sh::u_at, *sUl = b16 + sh::ul_at;
  const seq_chunks sc = w.seqs[n];
  const index_t first = sc.first, last = sc.first + sc.count - 1;
  const auto fetch = [&](index_t c, const chunk_info& ci, int s) {  // G_c, k_c (gL_c, Kd_c), s Pᵀ dO, W_c: one group
    if (c >= first) {
      float* st = sm + s * sh::stage;
      const auto tile = [&]<int Rows, int Cols>(float* dst, int ld, const float* src, index_t stride, int rows, int cols) {
        if constexpr (Lean) rd::ring_tile<Rows, Cols>(dst, ld, src, stride, rows, cols);
        else async_tile<Rows, Cols>(dst, ld, src, stride, rows, cols);
      };
      sd::fetch_decays<PerKey>(st + sh::g_at, w, c, hv);
      const sd::key_rows kr = sd::chunk_keys<PerKey>(w, c, ci, hv, h);
      tile.template operator()<CL, max_kv>(st + sh::row_at, sh::ld_row, kr.p, kr.stride, ci.len, K);
      tile.template operator()<CL, BV>(st + sh::in_at, sh::ld_in, w.dU + w.ch(c, hv) * CL * w.V + jt, w.V, ci.len, bv);
      if constexpr (Erases)
        tile.template operator()<CL, max_kv>(st + sh::col_at, sh::ld_col, w.W + w.ch(c, hv) * CL * w.K, w.K, ci.len, K);
    }
    async_commit();
  };
  const int d0 = 16 * warp + g;  // this thread's dh rows d0, d0 + 8; columns 8i + 2q, + 1
  // Y_c = s (Γ ⊙ Q)ᵀ dO, phase 1's, in dh's slot (read by the thread that later stores dh_c over it)
  const auto load_y = [&](float (&y)[NT2][4], index_t c) {  // (zeros before the first chunk)
    const float* yc = c >= first ? w.dh + w.ch(c, hv) * w.K * w.V + jt : nullptr;
    if constexpr (Lean) {
      if (yc) {
        rd::state_pairs<false>(y, const_cast<float*>(yc), w.V, K, bv, d0);
        return;
      }
    }
#pragma unroll
    for (int i = 0; i < NT2; ++i)
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int d = d0 + 8 * (x >> 1), j = 8 * i + 2 * q + (x & 1);
        y[i][x] = yc && d < K && j < bv ? yc[d * w.V + j] : 0.f;
      }
  };
  for (int e = tid; e < sh::f32_end; e += threads) sm[e] = 0.f;
  float acc[NT2][4], y[NT2][4];
  sd::load_state(acc, dST, n, hv, jt, K, bv, d0);
  sd::store_state<Terms>(acc, sH, sHl, LDB, d0);
  __syncthreads();
  chunk_info cur{}, prv{};
  if (sc.count) cur = w.chunk[last];
  if (sc.count > 1) prv = w.chunk[last - 1];
  fetch(last, cur, 0);
  load_y(y, last);
  const int ksK = (K + 15) / 16;
  for (index_t c = last; c >= first; --c) {
    const int s = int((last - c) & 1);
    const chunk_info before = c - 2 >= first ? w.chunk[c - 2] : chunk_info{};  // (the next chunk's fetch)
    const int L = cur.len;
    float yn[NT2][4];  // Y_{c−1}, in flight during this chunk
    load_y(yn, c - 1);
    async_wait<0>();  // chunk c's group
    __syncthreads();  // (every thread's copies; dh's copy; chunk c + 1's product 2 done: its stage is free)
    fetch(c - 1, prv, s ^ 1);
    const float* st = sm + s * sh::stage;
    const float *sK = st + sh::row_at, *sW = st + sh::col_at, *sIn = st + sh::in_at;
    const sd::chunk_decays<PerKey> dec(st + sh::g_at, L);
    float* dhc = w.dh + w.ch(c, hv) * w.K * w.V + jt;
    if constexpr (Lean) rd::state_pairs<true>(acc, dhc, w.V, K, bv, d0);
    sd::carry_adjoint<!Lean>(acc, y, dhc, w.V, K, bv, d0, dec);  // dh at the chunk's end for phase 4, then γ_L dh + Y
    // product 1: dU = s Pᵀ dO + F ⊙ (K dh); −dU's copy
    sd::reverse_value_adjoints<sh, Erases>(sK, sIn, sH, sHl, sU, sUl, w.dU + w.ch(c, hv) * CL * w.V + jt, w.V, L, bv,
                                           ksK, dec);
    __syncthreads();  // (−dU's copy written; dh's copy read by product 1)
    if constexpr (Erases)  // product 2: dh += Wᵀ (−dU)
      if (16 * warp < K)
        sd::warp_product<Terms, NT2, false>(acc, sW, sh::ld_col, 16 * warp, sU, sUl, LDB, 0, (L + 15) / 16);
    sd::store_state<Terms>(acc, sH, sHl, LDB, d0);
#pragma unroll
    for (int i = 0; i < NT2; ++i)
#pragma unroll
      for (int x = 0; x < 4; ++x) y[i][x] = yn[i][x];
    cur = prv;
    prv = before;
  }
  async_wait<0>();
  sd::store_initial_gradient(acc, dS0, n, hv, jt, K, bv, d0);
}

}  // namespace linea::cuda_detail::bwd
