// linea/backend/cuda/chunk_tiles.hpp — what the chunk kernels share: the 64-token kernels' tile sizes
// (scalar_chunk_kernel.hpp, delta_pipeline_kernel.hpp), the cp.async row loads, the in-chunk scan of the log
// decays, the state tile in and out of registers, Sᵀ from the state accumulators, and the output strips.
#pragma once
#include "mma.hpp"
#include "source.hpp"

namespace linea::cuda_detail::tiles {

constexpr int CL = 64, KP = 128, BV = 64, threads = 256;  // tokens per chunk, padded K, value columns per CTA
// 16-byte row pads: consecutive rows 4 banks apart, so the 8 rows of an ldmatrix phase never collide
constexpr int LDK = KP + 8, LD64 = 64 + 8;
constexpr float log2e = 1.4426950408889634f;

// A gate of exactly 0 (log decay −inf) would make every in-chunk difference after it −inf − (−inf) = NaN, so each
// log₂ decay is clamped at log2_zero before the chunk kernels sum it (the device side of chunk/decay.hpp's
// log_zero). 2^−64 ≈ 5e-20 leaves nothing of what came before a zero gate that float32 could show, and keeps |G|
// small enough that the sums after it lose at most ~2^−17 in the exponent. NaN passes through.
constexpr float log2_zero = -64.f;
__device__ __forceinline__ float clamped_log2_decay(float x) { return x < log2_zero ? log2_zero : x; }

// Whether a [B, T, H, D] view of 16-bit values has contiguous rows that start 16-byte aligned (cp.async copies
// them 16 bytes at a time): unit element stride, the others multiples of 8 elements, the base aligned.
template <class View>
bool rows_fit_cp_async(const View& v) {
  return v.str[3] == 1 && v.str[2] % 8 == 0 && v.str[1] % 8 == 0 && v.str[0] % 8 == 0 &&
         reinterpret_cast<std::uintptr_t>(v.ptr) % 16 == 0;
}

// Whether a 64-token chunk kernel can read this call's q, k, v: 16-bit, contiguous rows 16-byte aligned
// (cp.async), K ≤ 128, not the CCQ main pass. (The in-kernel L2 norm is applied to their tiles: l2norm_rows
// below. `normalize` is the additive rule's only, whose kernel, scalar_chunk_kernel.hpp, applies it.)
template <class T>
bool inputs_fit(const kernel_args<T>& k) {
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    return k.K <= KP && !k.q_tilde_in.ptr && rows_fit_cp_async(k.q) && rows_fit_cp_async(k.k) &&
           rows_fit_cp_async(k.v);
  }
}

__device__ __forceinline__ float ex2(float x) {  // 2^x; the approximate unit is enough for 16-bit operands
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 16 bytes global → shared, asynchronously; the first `bytes` are read, the rest of the 16 filled with zeros.
// (Also the backward's 16-byte copy, backward/async_copy.hpp. The "memory" clobber keeps the compiler from moving
// shared-memory accesses across the copy's issue.)
__device__ __forceinline__ void cp_async16_fill(void* smem, const void* gmem, int bytes) {
  const std::uint32_t s = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::); }

// Rows c0 .. c0 + L − 1 (columns 0 .. width − 1) of a 16-bit source whose row r starts at base + r·stride, into
// a [Rows][ld] tile of 8·PR columns (Rows = CL, or 32 for the per-key kernel's 32-token chunks), one cp.async per
// 16-byte piece; zeros past L and past width. NTH threads copy (tid: this thread's place among them): a thread
// keeps one 8-column piece and walks down the rows NTH / PR at a time, so its addresses are one pointer and a
// stride (no index arithmetic per piece).
template <int PR, int NTH = threads, int Rows = CL, class T, class E>
__device__ __forceinline__ void fetch_rows(E* dst, int ld, const T* base, index_t stride, index_t c0, int L, int width,
                                           int tid) {
  static_assert(sizeof(T) == 2 && sizeof(E) == 2, "16-bit tiles");
  static_assert(NTH % PR == 0 && Rows % (NTH / PR) == 0, "every thread copies the same number of pieces");
  constexpr int RP = NTH / PR;  // rows per pass
  const int r = tid / PR, c = 8 * (tid % PR), w = width - c;
  const int piece = w > 0 ? 2 * (w < 8 ? w : 8) : 0;  // bytes of this column piece in a row
  const T* src = base + (c0 + r) * stride + c;
  E* d = dst + r * ld + c;
#pragma unroll
  for (int i = 0; i < Rows / RP; ++i) {
    const int bytes = r + i * RP < L ? piece : 0;
    cp_async16_fill(d + i * RP * ld, bytes ? src + i * RP * stride : base, bytes);
  }
}

// Where a CTA of a 64-token kernel works — blockIdx = (value head, sequence, tile of BVW value columns) — and the
// chunk rows it reads: q and k at the query / key head (grouped value heads share it), v at its own head and
// columns. Row pointers are formed once (64-bit math); a chunk is then one cp.async per 16-byte piece.
template <class T, int BVW = BV>
struct site {
  index_t hv, jt;
  seq_range seq;
  int Kw, Vw;  // key width; value columns of this tile
  const T *q0, *k0, *v0;

  __device__ explicit site(const kernel_args<T>& a)
      : hv(blockIdx.x), jt(static_cast<index_t>(blockIdx.z) * BVW), seq(sequence_of(a, blockIdx.y)),
        Kw(static_cast<int>(a.K)), Vw(static_cast<int>(a.V - jt < BVW ? a.V - jt : index_t(BVW))),
        q0(a.q.ptr + seq.bt * a.q.str[0] + (hv / a.G) * a.q.str[2]),
        k0(a.k.ptr + seq.bt * a.k.str[0] + (hv / a.G) * a.k.str[2]),
        v0(a.v.ptr + seq.bt * a.v.str[0] + hv * a.v.str[2] + jt) {}
  // tokens of the chunk at c0 (CL, or fewer at the end of the sequence)
  __device__ int rows_in(index_t c0) const { return static_cast<int>(seq.t1 - c0 < CL ? seq.t1 - c0 : index_t(CL)); }
  // copied by NTH threads, this one at tid among them; the value tile is [CL][BVW + 8]
  template <int NTH = threads, class E>
  __device__ void fetch_q(E* dst, const kernel_args<T>& a, index_t c0, int L, int tid = threadIdx.x) const {
    fetch_rows<KP / 8, NTH>(dst, LDK, q0, a.q.str[1], c0, L, Kw, tid);
  }
  template <int NTH = threads, class E>
  __device__ void fetch_k(E* dst, const kernel_args<T>& a, index_t c0, int L, int tid = threadIdx.x) const {
    fetch_rows<KP / 8, NTH>(dst, LDK, k0, a.k.str[1], c0, L, Kw, tid);
  }
  template <int NTH = threads, class E>
  __device__ void fetch_v(E* dst, const kernel_args<T>& a, index_t c0, int L, int tid = threadIdx.x) const {
    fetch_rows<BVW / 8, NTH>(dst, BVW + 8, v0, a.v.str[1], c0, L, Vw, tid);
  }
};

// The in-kernel L2 norm (qk_l2norm) on a chunk tile [Rows][ld] of 16-bit rows (Rows = CL, or 32 for the per-key
// kernel's 32-token chunks), in place: x̂ = x / sqrt(Σ x² + 1e-6) per row (SPEC §1; as fla, the normalised rows are
// rounded to the input type). NTH threads, this one at tid among them; NTH / Rows consecutive lanes share a row.
// Rows past the chunk and columns past K are zeros and stay so.
template <int NTH, int Rows = CL, class E>
__device__ __forceinline__ void l2norm_rows(E* X, int ld, int tid) {
  static_assert(sizeof(E) == 2 && NTH % Rows == 0 && 32 % (NTH / Rows) == 0, "16-bit rows, lanes of a row in one warp");
  constexpr int TPR = NTH / Rows, W = KP / TPR;  // threads per row, columns per thread
  E* p = X + (tid / TPR) * ld + (tid % TPR) * W;
  uint4 raw[W / 8];
  float ss = 0;
#pragma unroll
  for (int u = 0; u < W / 8; ++u) {
    raw[u] = *reinterpret_cast<const uint4*>(p + 8 * u);
    const E* e = reinterpret_cast<const E*>(&raw[u]);
#pragma unroll
    for (int c = 0; c < 8; ++c) ss = fmaf(static_cast<float>(e[c]), static_cast<float>(e[c]), ss);
  }
#pragma unroll
  for (int o = 1; o < TPR; o <<= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  const float f = rsqrtf(ss + 1e-6f);
#pragma unroll
  for (int u = 0; u < W / 8; ++u) {
    E* e = reinterpret_cast<E*>(&raw[u]);
#pragma unroll
    for (int c = 0; c < 8; ++c) e[c] = from_float<E>(static_cast<float>(e[c]) * f);
    *reinterpret_cast<uint4*>(p + 8 * u) = raw[u];
  }
}

// One warp: dst[r] = Σ_{s ≤ r} x_s over the chunk's 64 rows, lane l holding x_l (x0) and x_{l+32} (x1).
__device__ __forceinline__ void scan64(float x0, float x1, float* dst) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float y0 = __shfl_up_sync(0xffffffffu, x0, o), y1 = __shfl_up_sync(0xffffffffu, x1, o);
    if (lane >= o) x0 += y0, x1 += y1;
  }
  dst[lane] = x0;
  dst[lane + 32] = x1 + __shfl_sync(0xffffffffu, x0, 31);
}

// Sᵀ [8·NT][ld] in the operand type from the state accumulators (warp w holds key rows 16w .. 16w + 15):
// stmatrix.trans on sm_90 (four 8×8 tiles per instruction); element stores for float tiles and in the portable PTX.
template <class E, int NT>
__device__ __forceinline__ void store_state_t(E* ST, int ld, const float (&acc)[NT][4]) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  auto elements = [&] {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) ST[(8 * nt + acc_col(e)) * ld + 16 * warp + acc_row(e)] = from_float<E>(acc[nt][e]);
  };
  if constexpr (std::is_same_v<E, float>) {
    (void)lane;
    elements();
  } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#pragma unroll
    for (int nt = 0; nt < NT; nt += 2) {
      const int m = lane >> 3;
      E* row = ST + (8 * (nt + m / 2) + (lane & 7)) * ld + 16 * warp + 8 * (m % 2);
      stmatrix_x4_trans(row, pack2<E>(acc[nt][0], acc[nt][1]), pack2<E>(acc[nt][2], acc[nt][3]),
                        pack2<E>(acc[nt + 1][0], acc[nt + 1][1]), pack2<E>(acc[nt + 1][2], acc[nt + 1][3]));
    }
#else
    (void)lane;
    elements();
#endif
  }
}

// How a warp's output strip goes to global memory (pko, issue #15):
//   pairs   — each lane stores its accumulators' column pairs as they lie (4 bytes): a quad's store covers 16 of
//             a sector's 32 bytes, the other half comes with the next instruction (ncu on the per-key forward:
//             37 % excess sectors);
//   sectors — the quad first trades its pairs (two shuffle rounds) so that each lane holds 8 consecutive columns,
//             stored as 16 bytes: a row's 32 columns are 64 contiguous bytes, two full sectors. Same values, same
//             roundings; for rows that are contiguous and 16-byte aligned (else the pairs).
// The per-key kernel takes sectors (pko's call on the H200: bit-identical; its global store instructions 1.11 M →
// 0.33 M and L2 write sectors 13.1 M → 7.1 M at 8×4096; kda 0.798 → 0.782 ms, gla 0.518 → 0.491), and since pko2
// so do the other forward kernels (scalar_chunk_kernel.hpp, delta_pipeline_kernel.hpp, perkey_chunk_kernel.hpp:
// bit-identical; through linea::chunkwise at 8×4096 linear_attn 0.318 → 0.300 ms, simple_gla 0.351 → 0.334, delta
// 0.393 → 0.371, gated_delta 0.488 → 0.466; bench/cuda/README.md pko2).
enum class strip_store { pairs, sectors };

// A warp's 16×8·NT strip c (mma accumulators: rows r0 + acc_row, columns c0w + 8t + acc_col) times `mul` into the
// [B, T, HV, V] view x at tokens c0 + row (rows < L) and value columns jt + column (columns < Vw); pairs of
// columns as one 4-byte store where the row allows it.
template <class T, int NT>
__device__ __forceinline__ void store_strip_pairs(const view<T, 4>& x, index_t bt, index_t c0, index_t hv, index_t jt,
                                                  int r0, int c0w, int L, int Vw, const float (&c)[NT][4], float mul) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = r0 + acc_row(2 * h);
    if (r >= L) continue;
    T* row = x.row(bt, c0 + r, hv) + jt * x.str[3];
    const index_t inner = x.str[3];
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const int j = c0w + 8 * t + acc_col(0);
      const float v0 = c[t][2 * h] * mul, v1 = c[t][2 * h + 1] * mul;
      if (inner == 1 && j + 1 < Vw && (reinterpret_cast<std::uintptr_t>(row + j) & 3) == 0) {
        const T pair[2] = {from_float<T>(v0), from_float<T>(v1)};
        std::uint32_t w;
        memcpy(&w, pair, sizeof w);
        *reinterpret_cast<std::uint32_t*>(row + j) = w;
      } else {
        if (j < Vw) row[j * inner] = from_float<T>(v0);
        if (j + 1 < Vw) row[(j + 1) * inner] = from_float<T>(v1);
      }
    }
  }
}

// Two 16-bit values rounded as store_strip_pairs rounds them, packed low-first (the order they have in memory).
template <class T>
__device__ __forceinline__ std::uint32_t rounded_pair(float v0, float v1) {
  const T pair[2] = {from_float<T>(v0), from_float<T>(v1)};
  std::uint32_t w;
  memcpy(&w, pair, sizeof w);
  return w;
}

// A 4×4 transpose of 32-bit words across a quad: lane q holds w[t] = its pair of column tile t; after, it holds
// tile q's four pairs in column order (w[p] = lane p's pair of tile q). Two butterfly rounds (lane distance 2, then
// 1), each moving two words a lane. Every lane of the warp must take part.
__device__ __forceinline__ void quad_transpose(std::uint32_t (&w)[4]) {
  const int q = threadIdx.x & 3;
  const bool hi = q & 2, odd = q & 1;
  // round 1: the off-diagonal 2×2 blocks change places
  std::uint32_t s0 = hi ? w[0] : w[2], s1 = hi ? w[1] : w[3];
  s0 = __shfl_xor_sync(0xffffffffu, s0, 2), s1 = __shfl_xor_sync(0xffffffffu, s1, 2);
  if (hi) w[0] = s0, w[1] = s1;
  else w[2] = s0, w[3] = s1;
  // round 2: each 2×2 block transposed
  s0 = odd ? w[0] : w[1], s1 = odd ? w[2] : w[3];
  s0 = __shfl_xor_sync(0xffffffffu, s0, 1), s1 = __shfl_xor_sync(0xffffffffu, s1, 1);
  if (odd) w[0] = s0, w[2] = s1;
  else w[1] = s0, w[3] = s1;
}

// Whether the strips of view x at value column jt can go out as 16-byte pieces: 16-bit, unit column stride, every
// other stride a multiple of 8 elements, the base and jt 16-byte aligned. (The same for every thread of the CTA.)
template <class T>
__device__ __forceinline__ bool rows_fit_sector_stores(const view<T, 4>& x, index_t jt) {
  return sizeof(T) == 2 && x.str[3] == 1 && x.str[2] % 8 == 0 && x.str[1] % 8 == 0 && x.str[0] % 8 == 0 &&
         jt % 8 == 0 && reinterpret_cast<std::uintptr_t>(x.ptr) % 16 == 0;
}

// store_strip_pairs' strip as 16-byte pieces (strip_store::sectors): for each group of four column tiles, the quad
// transposes its pairs, then lane q stores columns 8 (4g + q) .. + 7 of its row. A piece past Vw is stored
// element by element up to Vw; rows past L store nothing (after the shuffles, which the whole warp takes part in).
template <class T, int NT>
__device__ __forceinline__ void store_strip_sectors(const view<T, 4>& x, index_t bt, index_t c0, index_t hv, index_t jt,
                                                    int r0, int c0w, int L, int Vw, const float (&c)[NT][4], float mul) {
  static_assert(sizeof(T) == 2 && NT % 4 == 0, "16-bit outputs, whole groups of four column tiles");
  const int q = threadIdx.x & 3;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = r0 + acc_row(2 * h);
    T* row = r < L ? x.row(bt, c0 + r, hv) + jt : nullptr;
#pragma unroll
    for (int g = 0; g < NT / 4; ++g) {
      std::uint32_t w[4];
#pragma unroll
      for (int t = 0; t < 4; ++t) w[t] = rounded_pair<T>(c[4 * g + t][2 * h] * mul, c[4 * g + t][2 * h + 1] * mul);
      quad_transpose(w);
      const int j = c0w + 8 * (4 * g + q);
      if (!row) continue;
      if (j + 8 <= Vw) {
        *reinterpret_cast<uint4*>(row + j) = make_uint4(w[0], w[1], w[2], w[3]);
      } else {
#pragma unroll
        for (int i = 0; i < 8; ++i)
          if (j + i < Vw) row[j + i] = half_from_bits<T>(static_cast<std::uint16_t>(w[i / 2] >> (16 * (i % 2))));
      }
    }
  }
}

// A warp's strip of accumulators out (see store_strip_pairs), in the form S asks for where the view allows it.
template <strip_store S = strip_store::pairs, class T, int NT>
__device__ __forceinline__ void store_strip(const view<T, 4>& x, index_t bt, index_t c0, index_t hv, index_t jt,
                                            int r0, int c0w, int L, int Vw, const float (&c)[NT][4], float mul) {
  if constexpr (S == strip_store::sectors && sizeof(T) == 2 && NT % 4 == 0) {
    if (rows_fit_sector_stores(x, jt)) return store_strip_sectors(x, bt, c0, hv, jt, r0, c0w, L, Vw, c, mul);
  }
  store_strip_pairs(x, bt, c0, hv, jt, r0, c0w, L, Vw, c, mul);
}

// The state tile of this CTA from / to a [N, HV, K, V] fp32 view (absent: zeros / nothing).
template <int NT>
__device__ __forceinline__ void load_state(float (&acc)[NT][4], const view<const float, 4>& s, index_t row, index_t hv,
                                           index_t jt, index_t K, index_t V) {
  const int warp = threadIdx.x >> 5;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const index_t i = 16 * warp + acc_row(e), j = jt + 8 * nt + acc_col(e);
      acc[nt][e] = (s.ptr && i < K && j < V) ? s(row, hv, i, j) : 0.f;
    }
}
template <int NT>
__device__ __forceinline__ void save_state(const float (&acc)[NT][4], const view<float, 4>& s, index_t row, index_t hv,
                                           index_t jt, index_t K, index_t V) {
  if (!s.ptr) return;
  const int warp = threadIdx.x >> 5;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const index_t i = 16 * warp + acc_row(e), j = jt + 8 * nt + acc_col(e);
      if (i < K && j < V) s(row, hv, i, j) = acc[nt][e];
    }
}

}  // namespace linea::cuda_detail::tiles
