// linea/backend/cuda/backward/add16_grad_kernel.hpp — the per-chunk gradients of the additive fast path
// (add16_phases.hpp), one CTA per (chunk, value head), bf16 operands on tensor cores (mma.sync m16n8k16, fp32
// accumulation). With D_rs = e^(G_r − G_s) (s ≤ r, else 0), h = h_c, dH = dL/d(state after chunk c), s the scale:
//   A   = s (Q Kᵀ) ⊙ D                 dP = s (dO Vᵀ) ⊙ D
//   dq  = Diag(s e^G) dO hᵀ + dP K
//   dk  = Diag(e^(G_L − G)) V dHᵀ + dPᵀ Q
//   dv  = Diag(e^(G_L − G)) K dH  + Aᵀ dO
//   d log α_t (scalar decay) = Σ_{r ≥ t} dG_r + γ_L ⟨dH, h⟩ + Σ_{s < t} z_s, where
//       dG_r = Σ_{s<r} X_rs − Σ_{u>r} X_ur + s e^(G_r) q_r·(h do_r),   X = s (dO Vᵀ) ⊙ (Q Kᵀ) ⊙ D (strictly lower)
//       z_s  = e^(G_L − G_s) k_s·(dH v_s)   (the state write's terms; ⟨dH, h_{c+1}⟩ = γ_L⟨dH, h⟩ + Σ_s z_s)
//   The terms without decay — X's diagonal, z at the chunk's last token — enter no sum (issue #14: formed twice with
//   opposite signs they leave their roundings, which swamp d log α under extreme gates); X is formed from the same
//   fp32 accumulators in both sums, so the row and column sums cancel where the exact ones do.
// Outputs: dq, dk, d log α where add16_io says — phase 5's float32 workspace (per value head: phase 5 sums a group
// and applies the L2 norm's adjoint, the gate's), or the caller's 16-bit tensors (the direct path, add16_io.hpp) —
// and dv (the caller's, type T). The products' operands are q, k, v, dO, h, dH rounded to bf16 once each.
//
// Preconditions: K, V ≤ max_kv; h, dh written by add16_state_kernel; q, k, v, d_o, log α where add16_io says.
// Shared memory (bf16, rows padded by 16 bytes: conflict-free ldmatrix): Q, K, V, dO [CL][136], the state [128][136]
// (h, then dH in place), dP then A [CL][72]; ~112 KB, two CTAs an SM. The dot products of d log α read q, k from
// their bf16 tiles.
// Memory (add18, issue #14): h_c comes by cp.async in 16-byte pieces and — bf16 inputs, rows of 16-byte pieces — so
// do q, k, v, dO (no prefetch registers, no shared stores: all five tiles in flight at once); dH by 16-byte loads, the
// whole tile in one round; dk and dv (16-bit, K resp. V a multiple of 8) leave through V's and Q's dead tiles as
// 16-byte row pieces. Elsewhere (fp16 or float32 rows, K or V not a multiple of 8, state slots not 16-byte aligned) the
// register loads and pair stores of before.
#pragma once
#include "add16_state_kernel.hpp"

namespace linea::cuda_detail::bwd {

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

// Sum of a value over the four lanes of a row group (every lane gets it).
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

}  // namespace add16_detail

// X: the type of the inputs read and of dq, dk, d log α written (float: the workspace; T: the caller's).
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
  // h_c and dH_c by 16-byte pieces where their rows allow (V a multiple of 8: then Vp = V, every row 16-byte aligned)
  const __nv_bfloat16 *h_src = st.h + st.at(w, c, hv), *dh_src = st.dh + st.at(w, c, hv);
  const bool state16 = V % 8 == 0 && reinterpret_cast<std::uintptr_t>(h_src) % 16 == 0 &&
                       reinterpret_cast<std::uintptr_t>(dh_src) % 16 == 0;
  if (state16) {  // issued first (the largest tile), in flight with the input rows'
    const int pieces = 2 * V16, count = 16 * K16 * pieces;
    for (int e = tid; e < count; e += threads) {
      const int r = e / pieces, u = 8 * (e % pieces);
      const bool in = r < K && u < V;
      d::cp_async16(sS + r * ld + u, in ? h_src + r * st.Vp + u : h_src, in ? 16 : 0);
    }
  }
  // bf16 rows go to their tiles as they are: by cp.async (no registers, no stores) where 16-byte pieces fit
  bool rows_async = false;
  if constexpr (std::is_same_v<X, bf16>) {
    const X *q_src = io.q.row(ci.bt, ci.t0, h), *k_src = io.k.row(ci.bt, ci.t0, h),
            *v_src = io.v.row(ci.bt, ci.t0, hv), *o_src = io.d_o.row(ci.bt, ci.t0, hv);
    rows_async = d::rows16_ok(q_src, io.q.st, K) && d::rows16_ok(k_src, io.k.st, K) &&
                 d::rows16_ok(v_src, io.v.st, V) && d::rows16_ok(o_src, io.d_o.st, V);
    if (rows_async) {
      d::async_rows16<CL, max_kv / 8>(sQ, ld, q_src, io.q.st, L, K);
      d::async_rows16<CL, max_kv / 8>(sK, ld, k_src, io.k.st, L, K);
      d::async_rows16<CL, max_kv / 8>(sV, ld, v_src, io.v.st, L, V);
      d::async_rows16<CL, max_kv / 8>(sO, ld, o_src, io.d_o.st, L, V);
    }
  }
  if (!rows_async) {
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
  if (!state16) load_state(h_src, [](std::uint32_t* p, std::uint32_t x) { *p = x; });
  d::cp_async_wait_all();
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
    // dP's tile and X from one e^(G_r − G_s) an element (X = dP ⊙ s Q Kᵀ, the same products in the same order)
    const int m0 = cm0, n0 = cn0;
    float row[2] = {0.f, 0.f}, col[4][2] = {};
#pragma unroll
    for (int t = 0; t < 4; ++t)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int r = m0 + g + 8 * hf, s0 = n0 + 8 * t + 2 * q4;
        float v[2];
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int s = s0 + u;
          v[u] = s <= r && r < L ? scale * sp[t][2 * hf + u] * (Decays ? __expf(sG[r] - sG[s]) : 1.f) : 0.f;
          if (Decays && s < r) {  // (v is 0 for r ≥ L)
            const float x = v[u] * sa[t][2 * hf + u];
            row[hf] += x, col[t][u] += x;
          }
        }
        *reinterpret_cast<std::uint32_t*>(sP + r * ldc + s0) = pack2<e16>(v[0], v[1]);
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
    const auto dot2 = [&](std::uint32_t a2, std::uint32_t b2) {
      const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&a2)),
                   b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&b2));
      hdh = fmaf(a.x, b.x, fmaf(a.y, b.y, hdh));
    };
    if (state16) {  // 16-byte pieces, eight a thread in flight (the whole 128 × 128 tile in one round)
      const int pieces = 2 * V16, count = 16 * K16 * pieces;
      for (int e0 = 0; e0 < count; e0 += 8 * threads) {
        uint4 x[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const int e = e0 + tid + i * threads, r = e / pieces, u = 8 * (e % pieces);
          x[i] = e < count && r < K && u < V ? *reinterpret_cast<const uint4*>(dh_src + r * st.Vp + u) : make_uint4(0u, 0u, 0u, 0u);
        }
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const int e = e0 + tid + i * threads, r = e / pieces, u = 8 * (e % pieces);
          if (e < count) {
            uint4* p = reinterpret_cast<uint4*>(sS + r * ld + u);
            if (Decays) {
              const uint4 y = *p;
              dot2(y.x, x[i].x), dot2(y.y, x[i].y), dot2(y.z, x[i].z), dot2(y.w, x[i].w);
            }
            *p = x[i];
          }
        }
      }
    } else {
      load_state(dh_src, [&](std::uint32_t* p, std::uint32_t x) {
        if (Decays) dot2(*p, x);
        *p = x;
      });
    }
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
  // dk and dv leave through shared memory where their rows take 16-byte pieces (16-bit outputs, K resp. V a multiple
  // of 8, aligned rows): each warp puts its strip into a tile no warp reads any more — dk into V's (after the barrier
  // below), dv into Q's (after A's) — and after a last barrier the CTA writes whole rows, 16 bytes a thread and piece
  // (the strips' own stores fill half a 32-byte sector each: mma's accumulator layout).
  X* const dk_rows = io.dk.p ? io.dk.row(ci.bt, ci.t0, hv) : nullptr;
  T* const dv_rows = dv_out.ptr ? &dv_out(ci.bt, ci.t0, hv, 0) : nullptr;
  const bool dk_staged = dk_rows && d::rows16_ok(dk_rows, io.dk.st, K);
  const bool dv_staged = dv_rows && dv_out.stride(3) == 1 && d::rows16_ok(dv_rows, dv_out.stride(1), V);
  // a strip's accumulators as pairs of E into tile's rows m0 .., columns n0 .. (the strip's own cells)
  const auto stage_strip = [&](const float(&a)[8][4], auto* tile_of_e) {
    using E = std::remove_pointer_t<decltype(tile_of_e)>;
    auto* tile = reinterpret_cast<std::uint32_t*>(tile_of_e);  // (ld even: pairs 4-byte aligned)
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int r = m0 + g + 8 * hf, j = n0 + 8 * t + 2 * q4;
        tile[(r * ld + j) / 2] = d::float_to_half_bits<E>(a[t][2 * hf]) | (d::float_to_half_bits<E>(a[t][2 * hf + 1]) << 16);
      }
  };
  if (key_strip && io.dk.p && !dk_staged) store_strip(acc, K, dk_rows, io.dk.st);
  if (dk_staged || dv_out.ptr) __syncthreads();  // (every warp past dk's reads of V and dP)
  if constexpr (sizeof(X) == 2)
    if (dk_staged && key_strip) stage_strip(acc, reinterpret_cast<X*>(sV));

  // ---- dv = Diag(e^(G_L − G)) K dH + Aᵀ dO: A over dP's tile (every warp past dk's reads of dP) ----
  if (dv_out.ptr) {
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
      if (dv_staged) stage_strip(acc, reinterpret_cast<T*>(sQ));  // (Q's last reader, A, is behind the barrier)
      else if (dv_out.stride(3) == 1) store_strip(acc, V, dv_rows, dv_out.stride(1));
      else each_out(acc, V, [&](int r, int j, float x) { dv_out(ci.bt, ci.t0 + r, hv, j) = from_float<T>(x); });
    }
  }
  if (dk_staged || dv_staged) {
    __syncthreads();
    // rows < L, 16-byte pieces of columns < C from tile to out (row r at out + r·lds)
    const auto rows_out = [&](const e16* tile, auto* out, index_t lds, int C) {
#pragma unroll
      for (int e = tid; e < CL * (max_kv / 8); e += threads) {
        const int r = e / (max_kv / 8), u = 8 * (e % (max_kv / 8));
        if (r < L && u < C) *reinterpret_cast<uint4*>(out + r * lds + u) = *reinterpret_cast<const uint4*>(tile + r * ld + u);
      }
    };
    if (dk_staged) rows_out(sV, dk_rows, io.dk.st, K);
    if (dv_staged) rows_out(sQ, dv_rows, dv_out.stride(1), V);
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

}  // namespace linea::cuda_detail::bwd
