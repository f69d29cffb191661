// linea/backend/cuda/backward/ut_grad_kernel.hpp — phase 4's UT-transform adjoints for 16-bit inputs of the erasing
// rules (issue #14, grad13b): the products of chunk_grad_kernel.hpp that follow dW and need nothing else of the
// chunk,
//
//   dBv = Tᵀ dU                         → w.dBv_inter [chunks, HV, CL, V]
//   dBk = Tᵀ dW                         → w.dW_inter, in place (a key tile's job reads only that tile's columns)
//   M   = −(dBv Uᵀ + dBk Wᵀ) ⊙ D, s < r → w.M_inter [chunks, HV, CL, CL] (zeros on and above the diagonal)
//
// in two launches after inter_grad_kernel (which forms dW): ut_adjoint_kernel, one 128-thread CTA per (chunk, value
// head, 64-column tile of dBv or dBk), contracting over the chunk's tokens; then ut_m_kernel, one CTA per (chunk,
// value head), contracting over V and then K with inter_grad_kernel's slab loop. Operands are float32 workspace
// tensors converted to bf16 as they are staged, with inter_grad_kernel's hi/lo split (Terms = 3: lo·hi + hi·lo +
// hi·hi, ≈ 2⁻¹⁶ relative per product) and its mma.sync m16n8k16. In ut_adjoint_kernel both operands are read along
// their rows (T_sr and X_sj for fixed s: a [s][column] tile, coalesced), so the fragments pair two rows' 16-bit
// elements (row stride 72 bf16: the 8 × 4 fragment addresses hit distinct banks).
// Preconditions: an erasing rule, K, V ≤ max_kv, w.dBv_inter, w.dW_inter and w.M_inter carved (plan.hpp: 16-bit
// inputs, scalar decays), inter_grad_kernel's dW in w.dW_inter.
#pragma once
#include "inter_grad_kernel.hpp"
#include "../check.hpp"

namespace linea::cuda_detail::bwd {

template <int Terms>
struct ut_shape {
  static constexpr int threads = 128;               // four warps, each a 16-row strip of the 64 × 64 tile
  static constexpr int tile = 64;                   // output tile (rows: the chunk's tokens r; columns j or d)
  static constexpr int ld = tile + 8;               // bf16 row stride of the [s][column] tiles
  static constexpr int parts = Terms == 3 ? 2 : 1;  // hi (and lo)
  static constexpr int slab = CL * ld;              // one operand part: every s of the chunk at once
  static constexpr int quads = CL * tile / 4 / threads;  // float4 pieces per thread per operand
  static constexpr std::size_t bytes = sizeof(__nv_bfloat16) * 2 * parts * slab;
  static_assert(bytes <= 48 * 1024, "ut_adjoint_kernel: static shared memory");
  static constexpr int min_ctas = 4;
};

namespace ut_detail {

// Rows s < rows of a 64-column slice [c0, c0 + 64) of a row-major matrix (zeros past rows and past cols).
template <int Q>
__device__ __forceinline__ void load_rows(float4 (&x)[Q], const float* p, index_t ld, int rows, int cols, int c0,
                                          bool wide) {
#pragma unroll
  for (int i = 0; i < Q; ++i) {
    const int e = threadIdx.x + i * 128, r = e / 16, c = c0 + 4 * (e % 16);
    const float* src = p + r * ld + c;
    const bool in = r < rows;
    if (wide) {
      x[i] = in && c < cols ? __ldg(reinterpret_cast<const float4*>(src)) : make_float4(0.f, 0.f, 0.f, 0.f);
    } else {
      x[i].x = in && c < cols ? __ldg(src) : 0.f;
      x[i].y = in && c + 1 < cols ? __ldg(src + 1) : 0.f;
      x[i].z = in && c + 2 < cols ? __ldg(src + 2) : 0.f;
      x[i].w = in && c + 3 < cols ? __ldg(src + 3) : 0.f;
    }
  }
}

template <int Terms>
__device__ __forceinline__ void store_rows(__nv_bfloat16* s, const float4 (&x)[ut_shape<Terms>::quads]) {
  using sh = ut_shape<Terms>;
  using inter_detail::pack;
#pragma unroll
  for (int i = 0; i < sh::quads; ++i) {
    const int e = threadIdx.x + i * sh::threads, r = e / 16, c = 4 * (e % 16);
    const float v[4] = {x[i].x, x[i].y, x[i].z, x[i].w};
    __nv_bfloat16 hi[4], lo[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      hi[u] = __float2bfloat16_rn(v[u]);
      lo[u] = __float2bfloat16_rn(v[u] - __bfloat162float(hi[u]));
    }
    *reinterpret_cast<uint2*>(s + r * sh::ld + c) = make_uint2(pack(hi[0], hi[1]), pack(hi[2], hi[3]));
    if constexpr (Terms == 3)
      *reinterpret_cast<uint2*>(s + sh::slab + r * sh::ld + c) = make_uint2(pack(lo[0], lo[1]), pack(lo[2], lo[3]));
  }
}

// Two consecutive rows' elements of column m (the k pair of an mma fragment register).
template <int Terms>
__device__ __forceinline__ std::uint32_t row_pair(const __nv_bfloat16* s, int k, int m) {
  return inter_detail::pack(s[k * ut_shape<Terms>::ld + m], s[(k + 1) * ut_shape<Terms>::ld + m]);
}

}  // namespace ut_detail

__host__ __device__ constexpr int ut_jobs(int value_tiles, int key_tiles) {
  return value_tiles + key_tiles;
}

// One (chunk, value head, job) per CTA: blockIdx.x = (c·HV + hv)·jobs + job; jobs [0, vt) dBv's value tiles,
// [vt, vt + kt) dBk's key tiles. C_rj = Σ_s T_sr X_sj over s < L (X = dU or dW).
template <int Terms = inter_terms>
__global__ void __launch_bounds__(ut_shape<Terms>::threads, ut_shape<Terms>::min_ctas) ut_adjoint_kernel(const work w) {
  using sh = ut_shape<Terms>;
  namespace d = ut_detail;
  __shared__ __align__(16) __nv_bfloat16 sA[sh::parts * sh::slab], sB[sh::parts * sh::slab];
  const int K = int(w.K), V = int(w.V), vts = (V + sh::tile - 1) / sh::tile, kts = (K + sh::tile - 1) / sh::tile;
  const int jobs = vts + kts;
  const index_t cvi = index_t(blockIdx.x) / jobs;
  const int job = int(blockIdx.x % unsigned(jobs));
  const index_t c = cvi / w.HV, hv = cvi % w.HV;
  const int L = w.chunk[c].len;
  const std::size_t cv = w.ch(c, hv);
  const bool dbv = job < vts;
  const int cols = dbv ? V : K, j0 = (dbv ? job : job - vts) * sh::tile;
  const float* Tc = w.Tinv + cv * CL * CL;  // T_sr at s·CL + r
  // dBk in place of dW: this CTA alone reads and writes columns [j0, j0 + 64), every read before the barrier
  float* x = dbv ? w.dU + cv * CL * w.V : w.dW_inter + cv * CL * w.K;
  float* out = dbv ? w.dBv_inter + cv * CL * w.V : x;
  const index_t ldx = dbv ? w.V : w.K;
  // float4 loads only where the pointer allows them (plan.hpp starts every workspace slot 16-byte aligned since cl18;
  // before, T, U, W were packed end to end and 16-byte aligned only for some token counts — grad13b: T = 130)
  const bool wide = cols % 4 == 0 && reinterpret_cast<std::uintptr_t>(x) % 16 == 0,
             wide_t = reinterpret_cast<std::uintptr_t>(Tc) % 16 == 0;

  {
    float4 xa[sh::quads], xb[sh::quads];
    d::load_rows(xa, Tc, CL, L, CL, 0, wide_t);  // (rows s ≥ L: zeros; columns r ≥ L reach only rows not written)
    d::load_rows(xb, x, ldx, L, cols, j0, wide);
    d::store_rows<Terms>(sA, xa);
    d::store_rows<Terms>(sB, xb);
  }
  __syncthreads();

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, m0 = 16 * warp;
  float acc[8][4] = {};
#pragma unroll
  for (int ks = 0; ks < CL; ks += 16) {
    const auto frag_a = [&](const __nv_bfloat16* p, std::uint32_t(&f)[4]) {
      f[0] = d::row_pair<Terms>(p, ks + 2 * t, m0 + g);
      f[1] = d::row_pair<Terms>(p, ks + 2 * t, m0 + g + 8);
      f[2] = d::row_pair<Terms>(p, ks + 8 + 2 * t, m0 + g);
      f[3] = d::row_pair<Terms>(p, ks + 8 + 2 * t, m0 + g + 8);
    };
    std::uint32_t ah[4], al[4];
    frag_a(sA, ah);
    if constexpr (Terms == 3) frag_a(sA + sh::slab, al);
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      const int n = 8 * nt + g;
      const std::uint32_t bh[2] = {d::row_pair<Terms>(sB, ks + 2 * t, n), d::row_pair<Terms>(sB, ks + 8 + 2 * t, n)};
      if constexpr (Terms == 3) {
        const __nv_bfloat16* lo = sB + sh::slab;
        const std::uint32_t bl[2] = {d::row_pair<Terms>(lo, ks + 2 * t, n), d::row_pair<Terms>(lo, ks + 8 + 2 * t, n)};
        inter_detail::mma_bf16(acc[nt], al, bh);
        inter_detail::mma_bf16(acc[nt], ah, bl);
      }
      inter_detail::mma_bf16(acc[nt], ah, bh);
    }
  }
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = m0 + g + 8 * half;
    if (r >= L) continue;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int j = j0 + 8 * nt + 2 * t + u;
        if (j < cols) out[r * ldx + j] = acc[nt][2 * half + u];
      }
  }
}

// One (chunk, value head) per CTA: M_rs = −(Σ_j dBv_rj U_sj + Σ_d dBk_rd W_sd) D_rs for s < r < L, else 0
// (rows < L written). inter_grad_kernel's slab loop over V's slabs, then K's.
template <bool Decays, int Terms = inter_terms>
__global__ void __launch_bounds__(inter_shape<Terms>::threads, inter_shape<Terms>::min_ctas) ut_m_kernel(const work w) {
  using sh = inter_shape<Terms>;
  namespace d = inter_detail;
  __shared__ __align__(16) __nv_bfloat16 sA[sh::parts * sh::slab], sB[sh::parts * sh::slab];
  const index_t c = index_t(blockIdx.x) / w.HV, hv = index_t(blockIdx.x) % w.HV;
  const int L = w.chunk[c].len, K = int(w.K), V = int(w.V);
  const std::size_t cv = w.ch(c, hv);
  const float *dBv = w.dBv_inter + cv * CL * w.V, *Uc = w.U + cv * CL * w.V;
  const float *dBk = w.dW_inter + cv * CL * w.K, *Wc = w.W + cv * CL * w.K;
  const auto aligned = [](const float* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  // (U and W: workspace slots, 16-byte aligned since cl18; the test stays, see ut_adjoint_kernel)
  const bool wide_v = V % 4 == 0 && aligned(dBv) && aligned(Uc), wide_k = K % 4 == 0 && aligned(dBk) && aligned(Wc);
  const int sv = (V + sh::tk - 1) / sh::tk, slabs = sv + (K + sh::tk - 1) / sh::tk;
  const auto load = [&](float4(&xa)[sh::quads], float4(&xb)[sh::quads], int s) {  // (selects, one copy of the loads)
    const bool kp = s >= sv;
    const index_t ld = kp ? w.K : w.V;
    const int j0 = (kp ? s - sv : s) * sh::tk, depth = kp ? K : V;
    const bool wide = kp ? wide_k : wide_v;
    d::load_slab<Terms>(xa, kp ? dBk : dBv, ld, L, j0, depth, wide);
    d::load_slab<Terms>(xb, kp ? Wc : Uc, ld, L, j0, depth, wide);
  };

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, m0 = 16 * warp;
  float acc[8][4] = {};
  float4 xa[sh::quads], xb[sh::quads];
  load(xa, xb, 0);
  for (int s = 0; s < slabs; ++s) {
    d::store_slab<Terms>(sA, xa);
    d::store_slab<Terms>(sB, xb);
    __syncthreads();
    if (s + 1 < slabs) load(xa, xb, s + 1);  // the next slab's loads in flight during this one's mma
    d::slab_products<Terms>(acc, sA, sB, m0, g, t);
    __syncthreads();
  }

  // chunk_grad_kernel.hpp's epilogue of M: −(dBv Uᵀ + dBk Wᵀ) D on the strict lower triangle
  const float* Gc = w.Gc + cv * CL;
  float* M = w.M_inter + cv * CL * CL;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = m0 + g + 8 * half;
    if (r >= L) continue;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int n = 8 * nt + 2 * t + u;
        M[r * CL + n] = n < r ? -acc[nt][2 * half + u] * (Decays ? __expf(Gc[r] - Gc[n]) : 1.f) : 0.f;
      }
  }
}

// The two launches (after inter_grad_kernel, before chunk_grad_kernel<…, Inter>).
template <bool Decays>
void ut_grad_launch(const work& w, cudaStream_t st) {
  using sh = ut_shape<inter_terms>;
  const int vts = int((w.V + sh::tile - 1) / sh::tile), kts = int((w.K + sh::tile - 1) / sh::tile);
  const std::size_t heads = std::size_t(w.chunks) * std::size_t(w.HV);
  ut_adjoint_kernel<><<<unsigned(heads * std::size_t(ut_jobs(vts, kts))), sh::threads, 0, st>>>(w);
  check_launch("backward ut_adjoint_kernel");
  ut_m_kernel<Decays><<<unsigned(heads), inter_shape<inter_terms>::threads, 0, st>>>(w);
  check_launch("backward ut_m_kernel");
}

}  // namespace linea::cuda_detail::bwd
