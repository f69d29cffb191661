// linea/backend/cuda/backward/add16_state_kernel.hpp — the state passes of the additive fast path (add16_phases.hpp:
// update additive, decay none or scalar, 16-bit inputs, identity read), one kernel for both directions:
//   forward  h_{c+1} = γ_L h_c + Kdᵀ V,          Kd_s = e^(G_L − G_s) k_s      stores h_c (the state before chunk c)
//   reverse  dH_{c−1} = γ_L dH_c + s Qgᵀ dO,     Qg_r = e^(G_r) q_r            stores dH_c (dL/d state after chunk c)
//            and dS_0 = dL/d h_0 (the value after the first chunk) into d_initial_state
// G_r = Σ_{i ≤ r} log α_i inside the chunk, γ_L = e^(G_{L−1}); every factor is ≤ 1, so SPEC's extreme gates
// (log α = −20 a step) underflow to zero and never overflow.
//
// Preconditions: K, V ≤ max_kv; w.seqs, w.chunk the plan's; q, k, v, d_o, log α where add16_io says (phase 0's
// float32 workspace, or the caller's 16-bit tensors: add16_io.hpp).
// One CTA per (value tile of BV columns, value head, sequence — or piece of a long sequence: add16_pieces.hpp),
// 256 threads: warp i holds state rows (keys)
// 16i .. 16i + 15 × BV columns in fp32 registers (mma.sync accumulators) across all chunks; per chunk the operands
// go to shared memory as bf16 (the product is one m16n8k16 chain over the chunk's tokens), the next chunk's input
// rows — and its log α, for the scan — are loaded into registers while this chunk's product runs. BV ≤ 64 with
// 16-bit rows: two CTAs an SM (≤ 128 registers).
// The stored states are bf16 [chunks, HV, K, Vp] (add16_states: Vp = V rounded up to even, so every store and load
// is at least a 4-byte pair), over the float32 slots plan.hpp carves for w.h, w.dh (2·K·Vp ≤ 4·K·V bytes). Where
// Vp % 8 = 0 and the slot is 16-byte aligned (plan.hpp's slots always are since cl18; the test stays) each warp
// puts its accumulator pairs into its own staging rows in shared memory and stores whole 16-byte pieces (add18,
// issue #14: the pairs filled half a 32-byte sector each); else the pairs go out as they are.
#pragma once
#include <cstdint>
#include <type_traits>

#include "../mma.hpp"
#include "add16_io.hpp"
#include "add16_pieces.hpp"
#include "work.hpp"

namespace linea::cuda_detail::bwd {

struct add16_states {
  __nv_bfloat16 *h = nullptr, *dh = nullptr;
  index_t Vp = 0;  // a state row's stride (even)

  __host__ __device__ std::size_t at(const work& w, index_t c, index_t hv) const {
    return std::size_t(c * w.HV + hv) * std::size_t(w.K) * std::size_t(Vp);
  }
};
inline add16_states add16_states_of(const work& w) {
  return {reinterpret_cast<__nv_bfloat16*>(w.h), reinterpret_cast<__nv_bfloat16*>(w.dh), (w.V + 1) / 2 * 2};
}

namespace add16_detail {

using e16 = __nv_bfloat16;  // the products' operand type for both 16-bit input types (bf16's range: unnormalised q, k)

// A chunk's rows [CL][W] (W a multiple of 16) of X (float: the workspace; bf16 / fp16: the caller's) in registers
// as loaded: quad e = tid + i·threads is row e / (W/4), columns 4 (e % (W/4)) ..; zeros for rows ≥ L or columns ≥ C.
// All loads issue before any use; one 16- or 8-byte load a quad where the rows allow it.
template <int W, class X>
struct chunk_rows {
  static constexpr int per_row = W / 4, n = CL * per_row / threads;
  static_assert(CL * per_row % threads == 0, "chunk_rows: whole quads a thread");
  static constexpr bool wide32 = sizeof(X) == 4;
  using quad = std::conditional_t<wide32, float4, uint2>;
  quad x[n];

  __device__ __forceinline__ void load(const X* src, index_t lds, int L, int C) {
    const bool wide = C % 4 == 0 && lds % 4 == 0 && reinterpret_cast<std::uintptr_t>(src) % (4 * sizeof(X)) == 0;
#pragma unroll
    for (int i = 0; i < n; ++i) {
      const int e = threadIdx.x + i * threads, r = e / per_row, c = 4 * (e % per_row);
      const X* p = src + r * lds + c;
      if constexpr (wide32) {
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (r < L && c < C) {
          if (wide) {
            v = *reinterpret_cast<const float4*>(p);
          } else {
            v.x = p[0];
            if (c + 1 < C) v.y = p[1];
            if (c + 2 < C) v.z = p[2];
            if (c + 3 < C) v.w = p[3];
          }
        }
        x[i] = v;
      } else {
        uint2 v = make_uint2(0u, 0u);
        if (r < L && c < C) {
          if (wide) {
            v = *reinterpret_cast<const uint2*>(p);
          } else {
            const auto* b = reinterpret_cast<const std::uint16_t*>(p);
            v.x = b[0];
            if (c + 1 < C) v.x |= std::uint32_t(b[1]) << 16;
            if (c + 2 < C) v.y = b[2];
            if (c + 3 < C) v.y |= std::uint32_t(b[3]) << 16;
          }
        }
        x[i] = v;
      }
    }
  }
  __device__ __forceinline__ float4 values(int i) const {
    if constexpr (wide32) {
      return x[i];
    } else {
      return make_float4(half_bits_to_float<X>(x[i].x & 0xffffu), half_bits_to_float<X>(x[i].x >> 16),
                         half_bits_to_float<X>(x[i].y & 0xffffu), half_bits_to_float<X>(x[i].y >> 16));
    }
  }
  // Row r times f(r) as bf16 into dst (row stride ld elements, rows 8-byte aligned).
  template <class F>
  __device__ __forceinline__ void put(e16* dst, int ld, F f) const {
#pragma unroll
    for (int i = 0; i < n; ++i) {
      const int e = threadIdx.x + i * threads, r = e / per_row, c = 4 * (e % per_row);
      const float s = f(r);
      const float4 v = values(i);
      *reinterpret_cast<uint2*>(dst + r * ld + c) = make_uint2(pack2<e16>(s * v.x, s * v.y), pack2<e16>(s * v.z, s * v.w));
    }
  }
  // Row r as bf16 into dst unscaled: a bf16 input's bits as they are (the same as through float).
  __device__ __forceinline__ void put(e16* dst, int ld) const {
    if constexpr (std::is_same_v<X, bf16>) {
#pragma unroll
      for (int i = 0; i < n; ++i) {
        const int e = threadIdx.x + i * threads, r = e / per_row, c = 4 * (e % per_row);
        *reinterpret_cast<uint2*>(dst + r * ld + c) = x[i];
      }
    } else {
      put(dst, ld, [](int) { return 1.f; });
    }
  }
};

// 16 bytes global → shared by cp.async (bytes 0: zeros, src not read); the wait for every copy of this thread.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int bytes) {
  const std::uint32_t s = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// True when 16-byte pieces of rows (row r at p + r·stride, columns < C) start 16-byte aligned and end within C.
template <class X>
__device__ __forceinline__ bool rows16_ok(const X* p, index_t stride, int C) {
  return sizeof(X) == 2 && C % 8 == 0 && stride % 8 == 0 && reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}
// Rows [Rows] × columns [8·Pieces] of 16-bit elements into dst (row stride ld elements, rows 16-byte aligned) by
// cp.async, each thread of the CTA a share of the 16-byte pieces; zeros for rows ≥ R or columns ≥ C (rows16_ok).
template <int Rows, int Pieces, class X, class E>
__device__ __forceinline__ void async_rows16(E* dst, int ld, const X* src, index_t stride, int R, int C) {
  static_assert(sizeof(X) == 2 && sizeof(E) == 2);
#pragma unroll
  for (int e = threadIdx.x; e < Rows * Pieces; e += threads) {
    const int r = e / Pieces, c = 8 * (e % Pieces);
    const bool in = r < R && c < C;
    cp_async16(dst + r * ld + c, in ? src + r * stride + c : src, in ? 16 : 0);
  }
}

// The in-chunk cumulative log decay of L tokens (log α at la, row r at r·stride) into G[0..CL): one warp, a scan of
// pairs; rows past L repeat G_{L−1}.
// (chunk_scan_pair: this lane's pair a, b = log α of rows 2·lane, 2·lane + 1 already loaded, zeros past L.)
__device__ __forceinline__ void chunk_scan_pair(float a, float b, float* G) {
  const int lane = threadIdx.x & 31;
  float s = a + b;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float y = __shfl_up_sync(0xffffffffu, s, o);
    if (lane >= o) s += y;
  }
  G[2 * lane] = s - b, G[2 * lane + 1] = s;
}
template <class X>
__device__ __forceinline__ void chunk_scan(const X* la, index_t stride, int L, float* G) {
  const int lane = threadIdx.x & 31;
  chunk_scan_pair(2 * lane < L ? to_float(la[2 * lane * stride]) : 0.f,
                  2 * lane + 1 < L ? to_float(la[(2 * lane + 1) * stride]) : 0.f, G);
}

}  // namespace add16_detail

template <int BV>
struct add16_state_shape {
  static_assert(BV % 16 == 0 && BV <= max_kv, "add16 state pass: value tiles of 16-column multiples");
  static constexpr int lda = max_kv + 8, ldb = BV + 8, NT = BV / 8;  // (rows ≡ 16 mod 128 bytes or odd 16s: no conflicts)
  static constexpr int a_at = 0, b_at = CL * lda, tiles = b_at + CL * ldb;  // bf16 elements
  static constexpr std::size_t g_at = 2 * std::size_t(tiles);              // G, two chunks' slots (float)
  // each warp's 16 state rows as bf16 [16][ldb] on their way out (16-byte row stores; ldb ≡ 4 words mod 32: the
  // accumulator pairs go in without bank conflicts)
  static constexpr std::size_t stage_at = g_at + 2 * CL * sizeof(float);
  static constexpr std::size_t bytes = stage_at + 2 * std::size_t(threads / 32) * 16 * ldb;
};

// Reverse = false: the forward pass (init = S0, out = h); true: the reverse pass (init = dL/dS_T, out = dh, dS0).
// pc: the pieces (add16_pieces.hpp; none: a CTA row per sequence) — a piece starts from init where the pass
// starts its sequence, else from pc.in; with pc.end_only it starts from zero, stores no state and puts its end
// (and its Σ log α) into pc.end.
// X: where q, k, v, dO, log α come from (add16_io.hpp: float, phase 0's workspace; or the caller's 16-bit tensors).
// 64 columns and fewer: two CTAs an SM (≤ 128 registers: the accumulators ≤ 32 a thread) where the prefetched rows
// are 16-bit; float32 rows (phase 0's workspace) take twice the registers and would spill.
template <int BV, bool Reverse, bool Decays, class X>
__global__ void __launch_bounds__(threads, (BV <= 64 && sizeof(X) == 2) ? 2 : 1)
    add16_state_kernel(const work w, const add16_io<X> io, const view<const float, 4> init, const view<float, 4> dS0,
                       const add16_states st, const add16_pieces pc) {
  namespace d = add16_detail;
  using sh = add16_state_shape<BV>;
  constexpr int NT = sh::NT;
  // this CTA's run of chunks: a whole sequence, or a piece of one
  add16_piece piece;
  if (pc.piece) piece = pc.piece[blockIdx.z];
  else piece.first = w.seqs[blockIdx.z].first, piece.count = w.seqs[blockIdx.z].count, piece.seq = int(blockIdx.z);
  const bool starts = Reverse ? piece.index == piece.of - 1 : piece.index == 0;  // where the pass starts its sequence
  if (pc.end_only && (Reverse ? piece.index == 0 : piece.index == piece.of - 1)) return;  // (its end feeds nothing)
  const index_t j0 = index_t(blockIdx.x) * BV, hv = blockIdx.y, n = piece.seq, h = hv / w.G;
  const int K = int(w.K), bv = int(w.V - j0 < BV ? w.V - j0 : BV), warp = threadIdx.x >> 5, lane = threadIdx.x & 31,
            g = lane >> 2, q = lane & 3, m0 = 16 * warp;
  extern __shared__ __align__(16) unsigned char smem[];
  d::e16 *sA = reinterpret_cast<d::e16*>(smem) + sh::a_at, *sB = reinterpret_cast<d::e16*>(smem) + sh::b_at;
  float* sG = reinterpret_cast<float*>(smem + sh::g_at);
  const seq_chunks sc{piece.first, piece.count};
  const float scale = Reverse ? w.scale : 1.f;

  // ---- the state (rows m0 + g, + 8; columns 8i + 2q, + 1 of the tile) from S0 / dL/dS_T, or the state entering
  // the piece, or zeros (end pass); zeros past K, bv ----
  const float* in = pc.end_only || starts ? nullptr : pc.in + pc.at(blockIdx.z, hv, w.HV, w.K, w.V);
  float acc[NT][4];
#pragma unroll
  for (int i = 0; i < NT; ++i)
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const int r = m0 + g + 8 * (x >> 1), j = 8 * i + 2 * q + (x & 1);
      const bool on = r < K && j < bv && !pc.end_only;
      acc[i][x] = !on ? 0.f : in ? in[index_t(r) * w.V + j0 + j] : init.ptr ? init(n, hv, r, j0 + j) : 0.f;
    }
  float log_decay = 0.f;  // Σ log α over the chunks passed (end pass, scalar decays)

  // ---- per chunk (forward: first to last; reverse: last to first) ----
  d::chunk_rows<max_kv, X> ra;  // forward k, reverse q (key head h)
  d::chunk_rows<BV, X> rb;      // forward v, reverse d_o (value head hv, columns j0 ..)
  const add16_rows<const X>& a_src = Reverse ? io.q : io.k;
  const add16_rows<const X>& b_src = Reverse ? io.d_o : io.v;
  float la0 = 0.f, la1 = 0.f;   // warp 0 (decays): the next chunk's log α pair of this lane, loaded with its rows
  const auto fetch = [&](index_t c) {
    const chunk_info ci = w.chunk[c];
    ra.load(a_src.row(ci.bt, ci.t0, h), a_src.st, ci.len, K);
    rb.load(b_src.row(ci.bt, ci.t0, hv) + j0, b_src.st, ci.len, bv);
    if (Decays && warp == 0) {
      const X* la = io.log_alpha.row(ci.bt, ci.t0, hv);
      const index_t ls = io.log_alpha.st;
      la0 = 2 * lane < ci.len ? to_float(la[2 * lane * ls]) : 0.f;
      la1 = 2 * lane + 1 < ci.len ? to_float(la[(2 * lane + 1) * ls]) : 0.f;
    }
  };
  // 16-byte state stores through this warp's staging rows where every stored row starts 16-byte aligned
  __nv_bfloat16* const out_base = Reverse ? st.dh : st.h;
  const bool rows16 = st.Vp % 8 == 0 && reinterpret_cast<std::uintptr_t>(out_base) % 16 == 0;
  d::e16* stage = reinterpret_cast<d::e16*>(smem + sh::stage_at) + warp * 16 * sh::ldb;
  if (sc.count) fetch(Reverse ? sc.first + sc.count - 1 : sc.first);
  for (index_t i = 0; i < sc.count; ++i) {
    const index_t c = Reverse ? sc.first + sc.count - 1 - i : sc.first + i;
    const chunk_info ci = w.chunk[c];
    const int L = ci.len;
    float* G = sG + (i & 1) * CL;  // (two slots: a slow warp may still read chunk i − 1's while warp 0 writes i + 1's)
    if (Decays && warp == 0) d::chunk_scan_pair(la0, la1, G);
    __syncthreads();  // G; and every warp past the previous chunk's product (its reads of sA, sB)
    const float GL = Decays ? G[L - 1] : 0.f;
    log_decay += GL;
    if constexpr (Reverse)
      ra.put(sA, sh::lda, [&](int r) { return Decays ? scale * __expf(G[r]) : scale; });
    else
      ra.put(sA, sh::lda, [&](int r) { return Decays ? __expf(GL - G[r]) : 1.f; });
    rb.put(sB, sh::ldb);
    __syncthreads();
    if (i + 1 < sc.count) fetch(Reverse ? c - 1 : c + 1);  // (in flight during the store and the product)

    // ---- the state at this chunk out (bf16 pairs), then state ← γ_L state + Aᵀ B ----
    __nv_bfloat16* out = out_base + st.at(w, c, hv) + j0;
    if (pc.end_only) {
      // (no chunk state: the full pass stores them)
    } else if (rows16) {  // (the columns past bv are zeros and the pieces end by Vp: 8-column pieces that start below bv)
      constexpr int P = BV / 8, R = 32 / P;  // 16-byte pieces a row, rows a warp store
#pragma unroll
      for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf)
          *reinterpret_cast<std::uint32_t*>(stage + (g + 8 * hf) * sh::ldb + 8 * t + 2 * q) =
              pack2<__nv_bfloat16>(acc[t][2 * hf], acc[t][2 * hf + 1]);
      __syncwarp();
#pragma unroll
      for (int i = 0; i < 16 / R; ++i) {
        const int rr = i * R + lane / P, p = lane % P, r = m0 + rr;
        if (r < K && 8 * p < bv)
          *reinterpret_cast<uint4*>(out + r * st.Vp + 8 * p) = *reinterpret_cast<const uint4*>(stage + rr * sh::ldb + 8 * p);
      }
      __syncwarp();  // (the next chunk's pairs go in after every lane's reads)
    } else {
#pragma unroll
      for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
          const int r = m0 + g + 8 * hf, j = 8 * t + 2 * q;
          if (r < K && j < bv)
            *reinterpret_cast<std::uint32_t*>(out + r * st.Vp + j) = pack2<__nv_bfloat16>(acc[t][2 * hf], acc[t][2 * hf + 1]);
        }
    }
    if constexpr (Decays) {
      const float gamma = __expf(GL);
#pragma unroll
      for (int t = 0; t < NT; ++t)
#pragma unroll
        for (int x = 0; x < 4; ++x) acc[t][x] *= gamma;
    }
    if (m0 < K) mma_strip<d::e16, NT, true, true>(acc, sA + m0, sh::lda, sB, sh::ldb, (L + 15) / 16);
  }
  if (pc.end_only) {
    float* end = pc.end + pc.at(blockIdx.z, hv, w.HV, w.K, w.V);
#pragma unroll
    for (int i = 0; i < NT; ++i)
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int r = m0 + g + 8 * (x >> 1), j = 8 * i + 2 * q + (x & 1);
        if (r < K && j < bv) end[index_t(r) * w.V + j0 + j] = acc[i][x];
      }
    if (Decays && blockIdx.x == 0 && threadIdx.x == 0) pc.log_decay[blockIdx.z * w.HV + hv] = log_decay;
  } else if (Reverse && dS0.ptr && piece.index == 0) {  // (the sequence's first piece: its end is dL/dS_0)
#pragma unroll
    for (int i = 0; i < NT; ++i)
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int r = m0 + g + 8 * (x >> 1), j = 8 * i + 2 * q + (x & 1);
        if (r < K && j < bv) dS0(n, hv, r, j0 + j) = acc[i][x];
      }
  }
}

}  // namespace linea::cuda_detail::bwd
