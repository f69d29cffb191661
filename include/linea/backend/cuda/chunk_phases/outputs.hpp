// linea/backend/cuda/chunk_phases/outputs.hpp — the chunk's read, O = s [(Q ⊙ Γ) S + P U]:
//   normaliser     the additive rule's normalize option: s q_r · (Σ_{earlier chunks} k + Σ_{s ≤ r} k_s) per row
//   store_outputs  a warp per 16×32 strip of O, on tensor cores, to memory (the stats pass: Y, float)
#pragma once
#include "../causal_strip.hpp"
#include "layout.hpp"

namespace linea::cuda_detail::chunk_phases {

// Thread i of n; before decay_queries changes Q.
template <class Sh>
__device__ __forceinline__ void normaliser(const chunk_cta<Sh>& cx, int i, int n) {
  constexpr int CL = Sh::CL, KP = Sh::KP, LDK = Sh::LDK, LDC = Sh::LDC;
  const auto& sm = cx.sm;
  for (int r = i; r < CL; r += n) {
    float x = 0;
    for (int d = 0; d < KP; ++d) x += to_float(sm.Qs[r * LDK + d]) * sm.zsum[d];
    for (int s = 0; s <= r; ++s) x += to_float(sm.Pe[r * LDC + s]);
    sm.qz[r] = x * cx.a.scale;
  }
}

template <class Sh>
__device__ __forceinline__ void store_outputs(const chunk_cta<Sh>& cx, index_t c0, int L) {
  using traits = typename Sh::traits;
  using T = typename Sh::T;
  using E = typename Sh::E;
  constexpr int KP = Sh::KP, VP = Sh::VP, LDK = Sh::LDK, LDC = Sh::LDC, NW = Sh::NW;
  const auto& sm = cx.sm;
  const auto& a = cx.a;
  const index_t jt = cx.jt, Vd = cx.Vd;
  for (int job = cx.warp; job < Sh::strips; job += NW) {
    const int r0 = 16 * (job / (VP / 32)), j0 = 32 * (job % (VP / 32));  // one 16×32 strip of O per warp
    float c[4][4] = {};
    mma_strip<E, 4>(c, sm.Qs + r0 * LDK, LDK, sm.SopT + j0 * LDK, LDK, KP / 16);
    causal_strip<E, 4, false>(c, sm.Pe + r0 * LDC, LDC, sm.UsT + j0 * LDC, LDC, (r0 + 16) / 16);  // P: zero above the diagonal
    // This lane's outputs: rows r0 + g and r0 + g + 8, column pairs jt + j0 + 8t + 2q (+1).
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = r0 + acc_row(2 * h);
      if (r >= L) continue;
      const float mul = traits::stats ? 1.f : a.normalize ? a.scale / normaliser_divisor(sm.qz[r]) : a.scale;
      if constexpr (traits::stats) {
        float* row = a.y.row(cx.seq.bt, c0 + r, cx.hv);
#pragma unroll
        for (int t = 0; t < 4; ++t)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const index_t j = jt + j0 + 8 * t + acc_col(e);
            if (j < Vd) row[j * a.y.str[3]] = c[t][2 * h + e];
          }
      } else {
        T* row = a.o.row(cx.seq.bt, c0 + r, cx.hv);
        const index_t inner = a.o.str[3];
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const index_t j = jt + j0 + 8 * t + acc_col(0);
          const float o0 = c[t][2 * h] * mul, o1 = c[t][2 * h + 1] * mul;
          if (sizeof(T) == 2 && inner == 1 && j + 1 < Vd && (reinterpret_cast<std::uintptr_t>(row + j) & 3) == 0) {
            store_n<2>(row + j, {o0, o1});  // one 4-byte store
          } else {
            if (j < Vd) row[j * inner] = from_float<T>(o0);
            if (j + 1 < Vd) row[(j + 1) * inner] = from_float<T>(o1);
          }
        }
      }
    }
  }
}

}  // namespace linea::cuda_detail::chunk_phases
