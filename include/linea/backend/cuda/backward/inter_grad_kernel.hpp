// linea/backend/cuda/backward/inter_grad_kernel.hpp — phase 4's inter-chunk products for 16-bit inputs (issue #14,
// grad13): the four products of chunk_grad_kernel.hpp that contract over the value dimension V,
//
//   dq_r  = γ_r s (dO hᵀ)_r          → w.dq (its inter-chunk term; chunk_grad adds N K)
//   dk_s  = F_s (U_new dhᵀ)_s        → w.dk (its inter-chunk term; chunk_grad adds the rest)
//   dW    = −dU hᵀ (erase)           → w.dW_inter [chunks, HV, CL, K]
//   dP_rs = s (dO U_newᵀ)_rs, s ≤ r  → w.dP_inter [chunks, HV, CL, CL] (zeros above the diagonal)
//
// as small independent jobs: one 128-thread CTA computes one 64 × 64 output tile C = A Bᵀ, A and B 64 rows of a
// float32 workspace matrix contiguous along V (dO, U_new, dU; h, dh row-major [K][V]: a key tile of 64 rows). The
// grid is (chunk, value head) × jobs, the jobs of one chunk adjacent (their shared operands — dO, U_new, h — come
// from L2). Operands are converted to bf16 as they are staged in shared memory and multiplied with mma.sync
// m16n8k16 (float32 accumulators). With Terms = 3 each operand is split x = hi + lo (both bf16) and the product is
// lo·hi + hi·lo + hi·hi (≈ 2⁻¹⁶ relative per product, the chunk's other products stay 3xTF32); Terms = 1 multiplies
// hi·hi once (≈ 2⁻⁹). The choice (inter_terms) is by measurement: bench/cuda/README.md, grad13's section.
// Budget (inter_shape): 128 threads, Terms × 10 KB of static shared memory, ≤ 128 registers (launch bounds: 4 CTAs
// an SM at least; the shared memory allows 7 at Terms = 3): the SM's warps come from several CTAs, so a CTA's
// global round trip (one per 32-wide slab, the next slab's loads in flight during this one's mma) is covered by the
// others — phase 4's chunk_grad is one CTA an SM (prof11).
// Per-key decays (PerKey; work.hpp's per_key_inter): the factors are per (row, key channel) — dq_rd = s exp(G_rd)
// (dO hᵀ)_rd, dk_sd = exp(G_Ld − G_sd) (U_new dhᵀ)_sd from phase 1's Gk, per_key_grad_kernel.hpp's epilogues —
// and dW, dP are the same products.
// Preconditions: K, V ≤ max_kv (the caller's), w.dW_inter (erase) and w.dP_inter carved (plan.hpp: 16-bit inputs);
// PerKey: w.Gk (phase 1's), and Hdh off (the per-key kernel sums ⟨h, dh⟩ itself).
#pragma once
#include <cstdint>

#include <cuda_bf16.h>

#include "work.hpp"

namespace linea::cuda_detail::bwd {

#ifdef LINEA_BWD_INTER_TERMS
inline constexpr int inter_terms = LINEA_BWD_INTER_TERMS;  // bench/cuda/grad_ab.cu's A/B builds, not a user option
#else
inline constexpr int inter_terms = 3;
#endif

// intra14: the dk jobs of a decaying rule also form ⟨h, dh⟩ over their key tile (the decay of the state across the
// chunk, dG_L += γ_L ⟨h, dh⟩), reading h beside dh, so that chunk_grad16_kernel.hpp reads no state at all; each key
// tile's partial goes to dP_inter's row 0, column CL − 1 − tile (above the diagonal: no dP there; the dp job leaves
// those two entries alone). LINEA_BWD_HDH_IN_INTER=0 keeps it in chunk_grad16 (bench/cuda/grad_ab.cu's A/B builds),
// not a user option.
#ifdef LINEA_BWD_HDH_IN_INTER
inline constexpr bool hdh_in_inter = LINEA_BWD_HDH_IN_INTER;
#else
inline constexpr bool hdh_in_inter = false;
#endif
inline constexpr int hdh_slot(int key_tile) { return CL - 1 - key_tile; }  // (key tiles ≤ 2: max_kv = 128)

template <int Terms>
struct inter_shape {
  static_assert(Terms == 1 || Terms == 3, "inter_grad_kernel: one bf16 product or the hi/lo split");
  static constexpr int threads = 128;           // four warps, each a 16-row strip of the 64 × 64 tile
  static constexpr int tile = 64, tk = 32;      // output tile; slab depth along V
  static constexpr int ld = tk + 8;             // bf16 row stride (80 bytes): conflict-free 32-bit fragment loads
  static constexpr int parts = Terms == 3 ? 2 : 1;  // hi (and lo) tiles of each operand
  static constexpr int slab = tile * ld;        // bf16 elements of one operand part
  static constexpr std::size_t bytes = sizeof(__nv_bfloat16) * 2 * parts * slab;
  static_assert(bytes <= 48 * 1024, "inter_grad_kernel: static shared memory");
  static constexpr int min_ctas = 4;
  static constexpr int quads = tile * tk / 4 / threads;  // float4 pieces per thread per operand per slab
};

enum class inter_job : int { dq, dk, dw, dp };

template <bool Erases>
__host__ __device__ constexpr int inter_jobs(int key_tiles) {
  return (Erases ? 3 : 2) * key_tiles + 1;
}

namespace inter_detail {

__device__ __forceinline__ void mma_bf16(float (&c)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// One operand's 64 × tk slab, as this thread's float4 pieces (zeros past `rows` and past V).
template <int Terms>
__device__ __forceinline__ void load_slab(float4 (&x)[inter_shape<Terms>::quads], const float* p, index_t ld, int rows,
                                          int j0, int V, bool wide) {
  using sh = inter_shape<Terms>;
#pragma unroll
  for (int i = 0; i < sh::quads; ++i) {
    const int e = threadIdx.x + i * sh::threads, r = e / (sh::tk / 4), j = j0 + 4 * (e % (sh::tk / 4));
    const float* src = p + r * ld + j;
    if (wide) {
      x[i] = r < rows && j < V ? __ldg(reinterpret_cast<const float4*>(src)) : make_float4(0.f, 0.f, 0.f, 0.f);
    } else {
      const bool in = r < rows;
      x[i].x = in && j < V ? __ldg(src) : 0.f;
      x[i].y = in && j + 1 < V ? __ldg(src + 1) : 0.f;
      x[i].z = in && j + 2 < V ? __ldg(src + 2) : 0.f;
      x[i].w = in && j + 3 < V ? __ldg(src + 3) : 0.f;
    }
  }
}

__device__ __forceinline__ std::uint32_t pack(__nv_bfloat16 a, __nv_bfloat16 b) {
  return std::uint32_t(__bfloat16_as_ushort(a)) | (std::uint32_t(__bfloat16_as_ushort(b)) << 16);
}

// The pieces into shared memory as bf16: hi = bf16(x) at s, and (Terms = 3) lo = bf16(x − hi) at s + slab.
template <int Terms>
__device__ __forceinline__ void store_slab(__nv_bfloat16* s, const float4 (&x)[inter_shape<Terms>::quads]) {
  using sh = inter_shape<Terms>;
#pragma unroll
  for (int i = 0; i < sh::quads; ++i) {
    const int e = threadIdx.x + i * sh::threads, r = e / (sh::tk / 4), c = 4 * (e % (sh::tk / 4));
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

// One staged slab's products: acc (this warp's 16 rows × 64 columns, eight m16n8 tiles) += A Bᵀ over the slab's
// sh::tk-deep k range, A rows m0.. and B rows 0..63 in shared memory as bf16 (Terms == 3: the hi parts, with the lo
// parts sh::slab further on: hi·hi + lo·hi + hi·lo). g, t: the lane's group and thread in group (lane / 4, lane % 4).
template <int Terms>
__device__ __forceinline__ void slab_products(float (&acc)[8][4], const __nv_bfloat16* sA, const __nv_bfloat16* sB,
                                              int m0, int g, int t) {
  using sh = inter_shape<Terms>;
#pragma unroll
  for (int ks = 0; ks < sh::tk; ks += 16) {
    std::uint32_t ah[4], al[4];
    const auto frag_a = [&](const __nv_bfloat16* p, std::uint32_t(&f)[4]) {
      f[0] = *reinterpret_cast<const std::uint32_t*>(p + (m0 + g) * sh::ld + ks + 2 * t);
      f[1] = *reinterpret_cast<const std::uint32_t*>(p + (m0 + g + 8) * sh::ld + ks + 2 * t);
      f[2] = *reinterpret_cast<const std::uint32_t*>(p + (m0 + g) * sh::ld + ks + 8 + 2 * t);
      f[3] = *reinterpret_cast<const std::uint32_t*>(p + (m0 + g + 8) * sh::ld + ks + 8 + 2 * t);
    };
    frag_a(sA, ah);
    if constexpr (Terms == 3) frag_a(sA + sh::slab, al);
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      const int n = 8 * nt + g;
      const std::uint32_t bh[2] = {*reinterpret_cast<const std::uint32_t*>(sB + n * sh::ld + ks + 2 * t),
                                   *reinterpret_cast<const std::uint32_t*>(sB + n * sh::ld + ks + 8 + 2 * t)};
      if constexpr (Terms == 3) {
        const __nv_bfloat16* lo = sB + sh::slab;
        const std::uint32_t bl[2] = {*reinterpret_cast<const std::uint32_t*>(lo + n * sh::ld + ks + 2 * t),
                                     *reinterpret_cast<const std::uint32_t*>(lo + n * sh::ld + ks + 8 + 2 * t)};
        mma_bf16(acc[nt], al, bh);
        mma_bf16(acc[nt], ah, bl);
      }
      mma_bf16(acc[nt], ah, bh);
    }
  }
}

}  // namespace inter_detail

// One (chunk, value head, job) per CTA: blockIdx.x = (c·HV + hv)·jobs + job, the jobs (inter_job by key tile kt):
// [0, kt) dq, [kt, 2kt) dk, (erase) [2kt, 3kt) dW, last dP. Hdh: the dk jobs' ⟨h, dh⟩ (hdh_in_inter, decaying rules).
template <bool Erases, int Terms = inter_terms, bool Hdh = false, bool PerKey = false>
__global__ void __launch_bounds__(inter_shape<Terms>::threads, inter_shape<Terms>::min_ctas)
    inter_grad_kernel(const work w) {
  static_assert(!(Hdh && PerKey), "inter_grad_kernel: the per-key kernel sums <h, dh> itself");
  using sh = inter_shape<Terms>;
  namespace d = inter_detail;
  __shared__ __align__(16) __nv_bfloat16 sA[sh::parts * sh::slab], sB[sh::parts * sh::slab];
  const int K = int(w.K), V = int(w.V), kts = (K + sh::tile - 1) / sh::tile, jobs = inter_jobs<Erases>(kts);
  const index_t cvi = index_t(blockIdx.x) / jobs;
  const int job = int(blockIdx.x % unsigned(jobs));
  const index_t c = cvi / w.HV, hv = cvi % w.HV;
  const chunk_info ci = w.chunk[c];
  const int L = ci.len;
  const index_t tok0 = w.token(ci.bt, ci.t0), ldv = w.HV * w.V, ldg = w.HV * w.K;
  const std::size_t cv = w.ch(c, hv);
  const float* dO = w.d_o + (tok0 * w.HV + hv) * w.V;
  const float* Un = Erases ? w.U_new + cv * CL * w.V : w.v + (tok0 * w.HV + hv) * w.V;
  const index_t ldu = Erases ? w.V : ldv;
  const float *hc = w.h + cv * w.K * w.V, *dhc = w.dh + cv * w.K * w.V;

  // The job: A (rows < arows, stride lda), B (rows < brows, stride ldb), the key tile.
  const inter_job kind = job < kts ? inter_job::dq
                         : job < 2 * kts ? inter_job::dk
                         : (Erases && job < 3 * kts) ? inter_job::dw
                                                      : inter_job::dp;
  const int kt = kind == inter_job::dp ? 0 : job % kts, d0 = kt * sh::tile;
  const float *a = dO, *b = hc + std::size_t(d0) * w.V;
  index_t lda = ldv, ldb = w.V;
  int brows = K - d0;
  if (kind == inter_job::dk) a = Un, lda = ldu, b = dhc + std::size_t(d0) * w.V;
  if (kind == inter_job::dw) a = w.dU + cv * CL * w.V, lda = w.V;
  if (kind == inter_job::dp) b = Un, ldb = ldu, brows = L;
  const bool wide = V % 4 == 0 && lda % 4 == 0 && ldb % 4 == 0 && reinterpret_cast<std::uintptr_t>(a) % 16 == 0 &&
                    reinterpret_cast<std::uintptr_t>(b) % 16 == 0;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, m0 = 16 * warp;
  float acc[8][4] = {};
  float4 xa[sh::quads], xb[sh::quads];
  const int slabs = (V + sh::tk - 1) / sh::tk;
  // (Hdh) h's rows of the key tile beside dh's (xb): the same slab positions, ⟨h, dh⟩ summed as each slab is stored
  const bool hdh = Hdh && kind == inter_job::dk;
  const float* hrows = hc + std::size_t(d0) * w.V;
  const bool wide_h = V % 4 == 0 && reinterpret_cast<std::uintptr_t>(hrows) % 16 == 0;
  float hd = 0;
  const auto dot_h = [&](int s) {  // (block-uniform branch)
    float4 xh[sh::quads];
    d::load_slab<Terms>(xh, hrows, w.V, brows, s * sh::tk, V, wide_h);
#pragma unroll
    for (int i = 0; i < sh::quads; ++i)
      hd = fmaf(xh[i].x, xb[i].x, fmaf(xh[i].y, xb[i].y, fmaf(xh[i].z, xb[i].z, fmaf(xh[i].w, xb[i].w, hd))));
  };
  d::load_slab<Terms>(xa, a, lda, L, 0, V, wide);
  d::load_slab<Terms>(xb, b, ldb, brows, 0, V, wide);
  for (int s = 0; s < slabs; ++s) {
    if (Hdh && hdh) dot_h(s);
    d::store_slab<Terms>(sA, xa);
    d::store_slab<Terms>(sB, xb);
    __syncthreads();
    if (s + 1 < slabs) {  // the next slab's loads in flight during this one's mma
      d::load_slab<Terms>(xa, a, lda, L, (s + 1) * sh::tk, V, wide);
      d::load_slab<Terms>(xb, b, ldb, brows, (s + 1) * sh::tk, V, wide);
    }
    d::slab_products<Terms>(acc, sA, sB, m0, g, t);
    __syncthreads();
  }
  if (Hdh && hdh) {  // the CTA's sum (sA is free: the loop ended with a barrier) → dP_inter's row 0
#pragma unroll
    for (int o = 16; o; o >>= 1) hd += __shfl_xor_sync(0xffffffffu, hd, o);
    float* part = reinterpret_cast<float*>(sA);
    if (lane == 0) part[warp] = hd;
    __syncthreads();
    if (threadIdx.x == 0)
      w.dP_inter[cv * CL * CL + hdh_slot(kt)] = (part[0] + part[1]) + (part[2] + part[3]);
  }

  // Epilogues (chunk_grad_kernel.hpp's, with its factors: the same float expressions; per_key_grad_kernel.hpp's
  // per (row, channel) for PerKey).
  const float* Gc = PerKey ? nullptr : w.Gc + cv * CL;
  const float* Gk = PerKey ? w.Gk + cv * CL * w.K + d0 : nullptr;  // row r at r·K, this key tile's channels
  const float scale = w.scale;
  float* dq = w.dq + (tok0 * w.HV + hv) * w.K + d0;
  float* dk = w.dk + (tok0 * w.HV + hv) * w.K + d0;
  float* dW = w.dW_inter + cv * CL * w.K + d0;
  float* dP = w.dP_inter + cv * CL * CL;
  const float GL = PerKey ? 0.f : Gc[L - 1];
  // the factor of row r, channel n of the tile (PerKey: per channel)
  const auto factor = [&](int r, int n, float f_row) {
    if constexpr (PerKey) {
      if (kind == inter_job::dq) return scale * __expf(Gk[r * w.K + n]);
      if (kind == inter_job::dk) return __expf(Gk[(L - 1) * w.K + n] - Gk[r * w.K + n]);
      return 0.f;
    } else {
      return f_row;
    }
  };
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = m0 + g + 8 * half;
    if (r >= L) continue;
    const float f = PerKey ? 0.f
                    : kind == inter_job::dq ? scale * __expf(Gc[r])
                    : kind == inter_job::dk ? __expf(GL - Gc[r])
                                            : 0.f;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int n = 8 * nt + 2 * t + u;
        const float x = acc[nt][2 * half + u];
        if (kind == inter_job::dp) {
          if (Hdh && r == 0 && n >= hdh_slot(1)) continue;  // (the dk jobs' ⟨h, dh⟩ partials)
          dP[r * CL + n] = n <= r ? scale * x : 0.f;
        } else if (n < brows) {
          if (kind == inter_job::dq) dq[r * ldg + n] = factor(r, n, f) * x;
          else if (kind == inter_job::dk) dk[r * ldg + n] = factor(r, n, f) * x;
          else dW[r * w.K + n] = -x;
        }
      }
  }
}

}  // namespace linea::cuda_detail::bwd
