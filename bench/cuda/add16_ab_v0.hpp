// bench/cuda/add16_ab_v0.hpp — the additive fast path's state passes and per-chunk kernel as main fe6906c runs them
// (backward/add16_state_kernel.hpp, add16_grad_kernel.hpp verbatim but for the namespace: bwd::v0), so that
// add16_ab.cu times and compares them with the library's kernels on the same workspace in one process (add18).
// Generated from `git show fe6906c:include/linea/backend/cuda/backward/<file>` (comment and #include lines dropped),
// with a using-directive for add16_io.hpp's helpers. Not part of the library.
#pragma once
#include <linea/backend/cuda/backward/add16_phases.hpp>

// ---- add16_state_kernel.hpp (main fe6906c) ----


namespace linea::cuda_detail::bwd::v0 {

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
using namespace ::linea::cuda_detail::bwd::add16_detail;  // (add16_io.hpp's helpers)

using e16 = __nv_bfloat16;  // the products' operand type for both 16-bit input types (bf16's range: unnormalised q, k)

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

template <class X>
__device__ __forceinline__ void chunk_scan(const X* la, index_t stride, int L, float* G) {
  const int lane = threadIdx.x & 31;
  const float a = 2 * lane < L ? to_float(la[2 * lane * stride]) : 0.f,
              b = 2 * lane + 1 < L ? to_float(la[(2 * lane + 1) * stride]) : 0.f;
  float s = a + b;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float y = __shfl_up_sync(0xffffffffu, s, o);
    if (lane >= o) s += y;
  }
  G[2 * lane] = s - b, G[2 * lane + 1] = s;
}

}  // namespace add16_detail

template <int BV>
struct add16_state_shape {
  static_assert(BV % 16 == 0 && BV <= max_kv, "add16 state pass: value tiles of 16-column multiples");
  static constexpr int lda = max_kv + 8, ldb = BV + 8, NT = BV / 8;  // (rows ≡ 16 mod 128 bytes or odd 16s: no conflicts)
  static constexpr int a_at = 0, b_at = CL * lda, tiles = b_at + CL * ldb;  // bf16 elements
  static constexpr std::size_t g_at = 2 * std::size_t(tiles);              // G, two chunks' slots (float)
  static constexpr std::size_t bytes = g_at + 2 * CL * sizeof(float);
};

template <int BV, bool Reverse, bool Decays, class X>
__global__ void __launch_bounds__(threads, 1)
    add16_state_kernel(const work w, const add16_io<X> io, const view<const float, 4> init, const view<float, 4> dS0,
                       const add16_states st) {
  namespace d = add16_detail;
  using sh = add16_state_shape<BV>;
  constexpr int NT = sh::NT;
  const index_t j0 = index_t(blockIdx.x) * BV, hv = blockIdx.y, n = blockIdx.z, h = hv / w.G;
  const int K = int(w.K), bv = int(w.V - j0 < BV ? w.V - j0 : BV), warp = threadIdx.x >> 5, lane = threadIdx.x & 31,
            g = lane >> 2, q = lane & 3, m0 = 16 * warp;
  extern __shared__ __align__(16) unsigned char smem[];
  d::e16 *sA = reinterpret_cast<d::e16*>(smem) + sh::a_at, *sB = reinterpret_cast<d::e16*>(smem) + sh::b_at;
  float* sG = reinterpret_cast<float*>(smem + sh::g_at);
  const seq_chunks sc = w.seqs[n];
  const float scale = Reverse ? w.scale : 1.f;

  // ---- the state (rows m0 + g, + 8; columns 8i + 2q, + 1 of the tile) from S0 / dL/dS_T, zeros past K, bv ----
  float acc[NT][4];
#pragma unroll
  for (int i = 0; i < NT; ++i)
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const int r = m0 + g + 8 * (x >> 1), j = 8 * i + 2 * q + (x & 1);
      acc[i][x] = init.ptr && r < K && j < bv ? init(n, hv, r, j0 + j) : 0.f;
    }

  // ---- per chunk (forward: first to last; reverse: last to first) ----
  d::chunk_rows<max_kv, X> ra;  // forward k, reverse q (key head h)
  d::chunk_rows<BV, X> rb;      // forward v, reverse d_o (value head hv, columns j0 ..)
  const add16_rows<const X>& a_src = Reverse ? io.q : io.k;
  const add16_rows<const X>& b_src = Reverse ? io.d_o : io.v;
  const auto fetch = [&](index_t c) {
    const chunk_info ci = w.chunk[c];
    ra.load(a_src.row(ci.bt, ci.t0, h), a_src.st, ci.len, K);
    rb.load(b_src.row(ci.bt, ci.t0, hv) + j0, b_src.st, ci.len, bv);
  };
  if (sc.count) fetch(Reverse ? sc.first + sc.count - 1 : sc.first);
  for (index_t i = 0; i < sc.count; ++i) {
    const index_t c = Reverse ? sc.first + sc.count - 1 - i : sc.first + i;
    const chunk_info ci = w.chunk[c];
    const int L = ci.len;
    float* G = sG + (i & 1) * CL;  // (two slots: a slow warp may still read chunk i − 1's while warp 0 writes i + 1's)
    if (Decays && warp == 0) d::chunk_scan(io.log_alpha.row(ci.bt, ci.t0, hv), io.log_alpha.st, L, G);
    __syncthreads();  // G; and every warp past the previous chunk's product (its reads of sA, sB)
    const float GL = Decays ? G[L - 1] : 0.f;
    if constexpr (Reverse)
      ra.put(sA, sh::lda, [&](int r) { return Decays ? scale * __expf(G[r]) : scale; });
    else
      ra.put(sA, sh::lda, [&](int r) { return Decays ? __expf(GL - G[r]) : 1.f; });
    rb.put(sB, sh::ldb);
    __syncthreads();
    if (i + 1 < sc.count) fetch(Reverse ? c - 1 : c + 1);  // (in flight during the store and the product)

    // ---- the state at this chunk out (bf16 pairs), then state ← γ_L state + Aᵀ B ----
    __nv_bfloat16* out = (Reverse ? st.dh : st.h) + st.at(w, c, hv) + j0;
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int r = m0 + g + 8 * hf, j = 8 * t + 2 * q;
        if (r < K && j < bv)
          *reinterpret_cast<std::uint32_t*>(out + r * st.Vp + j) = pack2<__nv_bfloat16>(acc[t][2 * hf], acc[t][2 * hf + 1]);
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
  if (Reverse && dS0.ptr) {
#pragma unroll
    for (int i = 0; i < NT; ++i)
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int r = m0 + g + 8 * (x >> 1), j = 8 * i + 2 * q + (x & 1);
        if (r < K && j < bv) dS0(n, hv, r, j0 + j) = acc[i][x];
      }
  }
}

}  // namespace linea::cuda_detail::bwd::v0
// ---- add16_grad_kernel.hpp (main fe6906c) ----

namespace linea::cuda_detail::bwd::v0 {

struct add16_grad_shape {
  static constexpr int ld = max_kv + 8, ldc = CL + 8;
  static constexpr int q_at = 0, k_at = q_at + CL * ld, v_at = k_at + CL * ld, o_at = v_at + CL * ld,
                       s_at = o_at + CL * ld, p_at = s_at + max_kv * ld, tiles = p_at + CL * ldc;  // bf16 elements
  static constexpr std::size_t f_at = 2 * std::size_t(tiles);  // floats: G, dG, z [CL] each, scan and hdh slots
  static constexpr std::size_t bytes = f_at + sizeof(float) * (3 * CL + 4);
  static constexpr int ctas_per_sm = 2;
  static_assert(ctas_per_sm * (bytes + 1024) <= 228 * 1024, "add16_grad: two CTAs an SM must fit");
};

namespace add16_detail {
using namespace ::linea::cuda_detail::bwd::add16_detail;  // (add16_io.hpp's helpers)

__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

}  // namespace add16_detail

template <bool Decays, class T, class X>
__global__ void __launch_bounds__(threads, add16_grad_shape::ctas_per_sm)
    add16_grad_kernel(const work w, const add16_io<X> io, const add16_states st, const view<T, 4> dv_out) {
  namespace d = add16_detail;
  using sh = add16_grad_shape;
  using e16 = d::e16;
  constexpr int ld = sh::ld, ldc = sh::ldc;
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / w.G;
  const chunk_info ci = w.chunk[c];
  const int L = ci.len, K = int(w.K), V = int(w.V), tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2,
            q4 = lane & 3;
  const int K16 = (K + 15) / 16, V16 = (V + 15) / 16, L16 = (L + 15) / 16;  // 16-steps of the products
  extern __shared__ __align__(16) unsigned char smem[];
  e16* tiles = reinterpret_cast<e16*>(smem);
  e16 *sQ = tiles + sh::q_at, *sK = tiles + sh::k_at, *sV = tiles + sh::v_at, *sO = tiles + sh::o_at,
      *sS = tiles + sh::s_at, *sP = tiles + sh::p_at;
  float *sG = reinterpret_cast<float*>(smem + sh::f_at), *sdG = sG + CL, *sZ = sdG + CL, *sHdh = sZ + CL;
  const float scale = w.scale;

  // ---- G, the row sums zeroed; q, k, v, dO as bf16; h_c ----
  if (warp == 0) {
    if (Decays) d::chunk_scan(io.log_alpha.row(ci.bt, ci.t0, hv), io.log_alpha.st, L, sG);
    else sG[lane] = 0.f, sG[lane + 32] = 0.f;
  }
  if (tid < CL) sdG[tid] = 0.f, sZ[tid] = 0.f;
  if (tid == 0) *sHdh = 0.f;
  {
    d::chunk_rows<max_kv, X> a, b, c2, d2;  // (all four in flight together: 16-bit rows take half the registers)
    a.load(io.q.row(ci.bt, ci.t0, h), io.q.st, L, K);
    b.load(io.k.row(ci.bt, ci.t0, h), io.k.st, L, K);
    if constexpr (sizeof(X) == 2) {
      c2.load(io.v.row(ci.bt, ci.t0, hv), io.v.st, L, V);
      d2.load(io.d_o.row(ci.bt, ci.t0, hv), io.d_o.st, L, V);
    }
    a.put(sQ, ld);
    b.put(sK, ld);
    if constexpr (sizeof(X) != 2) {
      c2.load(io.v.row(ci.bt, ci.t0, hv), io.v.st, L, V);
      d2.load(io.d_o.row(ci.bt, ci.t0, hv), io.d_o.st, L, V);
    }
    c2.put(sV, ld);
    d2.put(sO, ld);
  }
  // The state tile [16·K16][16·V16] from bf16 pairs (zeros past K, V), eight pairs' loads in flight a thread;
  // each(slot, pair) stores a pair.
  const int pairs = 8 * V16, words = 16 * K16 * pairs;
  const auto load_state = [&](const __nv_bfloat16* src, auto each) {
    for (int e0 = 0; e0 < words; e0 += 8 * threads) {
      std::uint32_t x[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int e = e0 + tid + i * threads, r = e / pairs, u = e % pairs;
        x[i] = e < words && r < K && 2 * u < V ? *reinterpret_cast<const std::uint32_t*>(src + r * st.Vp + 2 * u) : 0u;
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int e = e0 + tid + i * threads, r = e / pairs, u = e % pairs;
        if (e < words) each(reinterpret_cast<std::uint32_t*>(sS + r * ld + 2 * u), x[i]);
      }
    }
  };
  load_state(st.h + st.at(w, c, hv), [](std::uint32_t* p, std::uint32_t x) { *p = x; });
  __syncthreads();

  // ---- dP = s (dO Vᵀ) ⊙ D (a bf16 tile) and X = dP ⊙ (Q Kᵀ) below the diagonal into dG: warp strips of 16 rows
  // × 32 columns; the strips wholly above the diagonal skip their products (zeros). (A = s (Q Kᵀ) ⊙ D is formed
  // again for dv, into dP's tile once dP is dead: two CTAs an SM need the space.) ----
  const int cm0 = 16 * (warp & 3), cn0 = 32 * (warp >> 2);  // this warp's [CL][CL] strip
  const bool causal_strip = cn0 <= cm0 + 15 && cm0 < L;
  // x(r, s, pair of values) → the pair times D (zero outside s ≤ r < L) into tile (bf16, columns s, s + 1)
  const auto causal_out = [&](const float(&acc)[4][4], e16* tile) {
#pragma unroll
    for (int t = 0; t < 4; ++t)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int r = cm0 + g + 8 * hf, s0 = cn0 + 8 * t + 2 * q4;
        float v[2];
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int s = s0 + u;
          v[u] = s <= r && r < L ? scale * acc[t][2 * hf + u] * (Decays ? __expf(sG[r] - sG[s]) : 1.f) : 0.f;
        }
        *reinterpret_cast<std::uint32_t*>(tile + r * ldc + s0) = pack2<e16>(v[0], v[1]);
      }
  };
  {
    float sa[4][4] = {}, sp[4][4] = {};
    if (causal_strip) {
      if (Decays) mma_strip<e16, 4>(sa, sQ + cm0 * ld, ld, sK + cn0 * ld, ld, K16);
      mma_strip<e16, 4>(sp, sO + cm0 * ld, ld, sV + cn0 * ld, ld, V16);
    }
    causal_out(sp, sP);
    const int m0 = cm0, n0 = cn0;
    float row[2] = {0.f, 0.f}, col[4][2] = {};
#pragma unroll
    for (int t = 0; t < 4; ++t)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int r = m0 + g + 8 * hf, s0 = n0 + 8 * t + 2 * q4;
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int s = s0 + u;
          if (Decays && s < r && r < L) {
            const float x = scale * sp[t][2 * hf + u] * __expf(sG[r] - sG[s]) * sa[t][2 * hf + u];
            row[hf] += x, col[t][u] += x;
          }
        }
      }
    if constexpr (Decays) {
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const float x = d::quad_sum(row[hf]);
        if (q4 == 0 && x != 0.f) atomicAdd(&sdG[m0 + g + 8 * hf], x);
      }
#pragma unroll
      for (int t = 0; t < 4; ++t)
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          float x = col[t][u];
          x += __shfl_xor_sync(0xffffffffu, x, 4), x += __shfl_xor_sync(0xffffffffu, x, 8);
          x += __shfl_xor_sync(0xffffffffu, x, 16);
          if (g == 0 && x != 0.f) atomicAdd(&sdG[n0 + 8 * t + 2 * q4 + u], -x);
        }
    }
  }

  // The strips of the [CL][K] and [CL][V] outputs: rows m0 .. m0 + 15, columns n0 .. n0 + 63.
  const int m0 = 16 * (warp & 3), n0 = 64 * (warp >> 2), kb = m0 / 16;
  const bool key_strip = m0 < L && n0 < K, value_strip = m0 < L && n0 < V;
  // x(r, col, value) over a strip's accumulators (rows r < L, columns < n only)
  const auto each_out = [&](const float(&acc)[8][4], int n, auto x) {
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = m0 + g + 8 * (e >> 1), j = n0 + 8 * t + 2 * q4 + (e & 1);
        if (r < L && j < n) x(r, j, acc[t][e]);
      }
  };
  // a strip's accumulators (rows r < L, columns < n) into out (type of out; row r at out + r·lds), pairs at a time
  const auto store_strip = [&](const float(&acc)[8][4], int n, auto* out, index_t lds) {
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int r = m0 + g + 8 * hf, j = n0 + 8 * t + 2 * q4;
        if (r < L) d::store_pair(out + r * lds, j, n, acc[t][2 * hf], acc[t][2 * hf + 1]);
      }
  };
  // row sums of f(r, col, value) over a strip into sum[r] (one atomic a row and warp)
  const auto row_sums = [&](const float(&acc)[8][4], float* sum, auto f) {
    float z[2] = {0.f, 0.f};
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = m0 + g + 8 * (e >> 1), j = n0 + 8 * t + 2 * q4 + (e & 1);
        if (r < L && j < K) z[e >> 1] = fmaf(f(r, j), acc[t][e], z[e >> 1]);
      }
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const float x = d::quad_sum(z[hf]);
      if (q4 == 0 && m0 + g + 8 * hf < L) atomicAdd(&sum[m0 + g + 8 * hf], x);
    }
  };
  const float GL = sG[L - 1];
  const auto scale_rows = [&](float(&acc)[8][4], auto f) {
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const float s = f(m0 + g + 8 * hf);
#pragma unroll
      for (int t = 0; t < 8; ++t) acc[t][2 * hf] *= s, acc[t][2 * hf + 1] *= s;
    }
  };
  const auto decay_to_end = [&](int r) { return Decays ? (r < L ? __expf(GL - sG[r]) : 0.f) : 1.f; };

  // ---- dq's inter-chunk term s e^G dO hᵀ (and its part of dG) ----
  float acc[8][4] = {};
  if (key_strip) mma_strip<e16, 8>(acc, sO + m0 * ld, ld, sS + n0 * ld, ld, V16);
  scale_rows(acc, [&](int r) { return Decays ? scale * __expf(sG[r]) : scale; });
  if (Decays && key_strip) row_sums(acc, sdG, [&](int r, int j) { return __bfloat162float(sQ[r * ld + j]); });
  __syncthreads();  // (every read of h and of the tiles' writers done)

  // ---- dH over h in place (⟨dH, h⟩ on the way), then dq += dP K ----
  {
    float hdh = 0.f;
    load_state(st.dh + st.at(w, c, hv), [&](std::uint32_t* p, std::uint32_t x) {
      if (Decays) {
        const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p)),
                     b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&x));
        hdh = fmaf(a.x, b.x, fmaf(a.y, b.y, hdh));
      }
      *p = x;
    });
    if constexpr (Decays) {
      for (int o = 16; o; o >>= 1) hdh += __shfl_xor_sync(0xffffffffu, hdh, o);
      if (lane == 0) atomicAdd(sHdh, hdh);
    }
  }
  if (key_strip) mma_strip<e16, 8, false, true>(acc, sP + m0 * ldc, ldc, sK + n0, ld, kb + 1);
  if (key_strip && io.dq.p) store_strip(acc, K, io.dq.row(ci.bt, ci.t0, hv), io.dq.st);
  __syncthreads();  // (dH in place)

  // ---- dk = Diag(e^(G_L − G)) V dHᵀ (its part of dG: z) + dPᵀ Q ----
#pragma unroll
  for (int t = 0; t < 8; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.f;
  if (key_strip) mma_strip<e16, 8>(acc, sV + m0 * ld, ld, sS + n0 * ld, ld, V16);
  scale_rows(acc, decay_to_end);
  if (Decays && key_strip) row_sums(acc, sZ, [&](int r, int j) { return __bfloat162float(sK[r * ld + j]); });
  if (key_strip && L16 > kb)
    mma_strip<e16, 8, true, true>(acc, sP + 16 * kb * ldc + m0, ldc, sQ + 16 * kb * ld + n0, ld, L16 - kb);
  if (key_strip && io.dk.p) store_strip(acc, K, io.dk.row(ci.bt, ci.t0, hv), io.dk.st);

  // ---- dv = Diag(e^(G_L − G)) K dH + Aᵀ dO: A over dP's tile (every warp past dk's reads of dP) ----
  if (dv_out.ptr) {
    __syncthreads();
    {
      float sa[4][4] = {};
      if (causal_strip) mma_strip<e16, 4>(sa, sQ + cm0 * ld, ld, sK + cn0 * ld, ld, K16);
      causal_out(sa, sP);
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < 8; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.f;
    if (value_strip) {
      mma_strip<e16, 8, false, true>(acc, sK + m0 * ld, ld, sS + n0, ld, K16);
      scale_rows(acc, decay_to_end);
      if (L16 > kb)
        mma_strip<e16, 8, true, true>(acc, sP + 16 * kb * ldc + m0, ldc, sO + 16 * kb * ld + n0, ld, L16 - kb);
      if (dv_out.stride(3) == 1) store_strip(acc, V, &dv_out(ci.bt, ci.t0, hv, 0), dv_out.stride(1));
      else each_out(acc, V, [&](int r, int j, float x) { dv_out(ci.bt, ci.t0 + r, hv, j) = from_float<T>(x); });
    }
  }

  // ---- d log α_t = Σ_{r ≥ t} dG_r + γ_L ⟨dH, h⟩ + Σ_{s < t} z_s: one warp, two rows a lane, no term subtracted ----
  if constexpr (Decays) {
    __syncthreads();
    if (warp == 0) {
      const float a = sdG[2 * lane], b = sdG[2 * lane + 1], za = sZ[2 * lane], zb = sZ[2 * lane + 1];
      float suf = a + b, pre = za + zb;  // inclusive scans over lanes: suffix of dG pairs, prefix of z pairs
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const float y = __shfl_down_sync(0xffffffffu, suf, o), p = __shfl_up_sync(0xffffffffu, pre, o);
        if (lane + o < 32) suf += y;
        if (lane >= o) pre += p;
      }
      float after = __shfl_down_sync(0xffffffffu, suf, 1), before = __shfl_up_sync(0xffffffffu, pre, 1);
      if (lane == 31) after = 0.f;
      if (lane == 0) before = 0.f;
      const float state = __expf(GL) * *sHdh;
      const float d1 = b + after, d0 = a + d1;  // Σ_{r ≥ t} dG_r at t = 2 lane + 1, 2 lane
      if (io.dlog_alpha.p) {
        X* out = io.dlog_alpha.row(ci.bt, ci.t0, hv);
        const index_t lo = io.dlog_alpha.st;
        if (2 * lane < L) out[2 * lane * lo] = from_float<X>(d0 + state + before);
        if (2 * lane + 1 < L) out[(2 * lane + 1) * lo] = from_float<X>(d1 + state + (before + za));
      }
    }
  }
}

}  // namespace linea::cuda_detail::bwd::v0
