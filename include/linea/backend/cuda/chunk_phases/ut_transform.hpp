// linea/backend/cuda/chunk_phases/ut_transform.hpp — the UT transform of the delta family (the device side of
// chunk/ut_transform.hpp): the corrections solve (I + A) U = Z with
//   right_hand_side     Z = W_v − X S   (X the erase key, times Γ), a warp per 16×32 strip, on tensor cores
//   forward_substitute  U = (I + A)⁻¹ Z, a thread per value column, on-chip; U is the write residual u
// T = (I + A)⁻¹ is never formed: one substitution on the right-hand side gives U directly.
#pragma once
#include "layout.hpp"

namespace linea::cuda_detail::chunk_phases {

template <class Sh>
__device__ __forceinline__ void right_hand_side(const chunk_cta<Sh>& cx) {
  using traits = typename Sh::traits;
  using E = typename Sh::E;
  constexpr int KP = Sh::KP, VP = Sh::VP, LDK = Sh::LDK, LDC = Sh::LDC, LDZ = Sh::LDZ, NW = Sh::NW;
  const auto& sm = cx.sm;
  if constexpr (traits::erases) {
    for (int job = cx.warp; job < Sh::strips; job += NW) {
      const int r0 = 16 * (job / (VP / 32)), j0 = 32 * (job % (VP / 32));
      float c[4][4] = {};
      mma_strip<E, 4>(c, (traits::per_key ? sm.XG : sm.EK) + r0 * LDK, LDK, sm.SopT + j0 * LDK, LDK, KP / 16);
#pragma unroll
      for (int t = 0; t < 4; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = r0 + acc_row(e), j = j0 + 8 * t + acc_col(e);
          float x = c[t][e];
          if constexpr (!traits::per_key && traits::scalar) x *= exp2_for<E>(sm.G(r, 0));
          if constexpr (Sh::z_in_u) sm.UsT[j * LDC + r] = to_float(sm.UsT[j * LDC + r]) - x;
          else sm.Zs[r * LDZ + j] = to_float(sm.UsT[j * LDC + r]) - x;
        }
    }
  }
}

// Thread j < VP: value column j of U, into the U tile (transposed) and to the residual output.
template <class Sh>
__device__ __forceinline__ void forward_substitute(const chunk_cta<Sh>& cx, int j, index_t c0, int L) {
  using T = typename Sh::T;
  using E = typename Sh::E;
  constexpr int CL = Sh::CL, LDC = Sh::LDC, LDZ = Sh::LDZ, LDM = Sh::LDM;
  const auto& sm = cx.sm;
  const auto& a = cx.a;
  float z[CL];
#pragma unroll
  for (int r = 0; r < CL; ++r) z[r] = Sh::z_in_u ? to_float(sm.UsT[j * LDC + r]) : sm.Zs[r * LDZ + j];
  // Right-looking substitution: once z_s is final it leaves every later row at once. The 31 − s updates
  // of a step are independent, so the dependent chain is 31 FMAs long instead of 496 (row by row).
#pragma unroll
  for (int s = 0; s < CL - 1; ++s)
#pragma unroll
    for (int r4 = (s + 1) / 4; r4 < CL / 4; ++r4) {  // Aᵀ(s, 4 r4 ..): one 16-byte broadcast read
      float m[4];
      if constexpr (LDM % 4 == 0) {
        load_n<4>(sm.Ms + s * LDM + 4 * r4, m);
      } else {
#pragma unroll
        for (int u = 0; u < 4; ++u) m[u] = sm.Ms[s * LDM + 4 * r4 + u];
      }
#pragma unroll
      for (int u = 0; u < 4; ++u)
        if (4 * r4 + u > s) z[4 * r4 + u] = fmaf(-m[u], z[s], z[4 * r4 + u]);
    }
#pragma unroll
  for (int r = 0; r < CL; ++r) sm.UsT[j * LDC + r] = from_float<E>(z[r]);
  if (a.residual.ptr && cx.jt + j < cx.Vd) {
#pragma unroll
    for (int r = 0; r < CL; ++r)
      if (r < L) a.residual(cx.seq.bt, c0 + r, cx.hv, cx.jt + j) = from_float<T>(z[r]);
  }
}

}  // namespace linea::cuda_detail::chunk_phases
