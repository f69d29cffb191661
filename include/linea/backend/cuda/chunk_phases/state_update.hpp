// linea/backend/cuda/chunk_phases/state_update.hpp — the state carried to the next chunk (the device side of
// chunk/state_update.hpp), in registers:
//   S ← Diag(Γ_C) S + K_dᵀ U,   K_d = K ⊙ 2^(G_C − G) (decay_channel built it, transposed)
// Warp w holds key rows 16w .. 16w + 15 of the state as mma accumulators: acc[nt][e] = S(16w + acc_row(e),
// 8nt + acc_col(e)). Also Σ k for the normaliser of the next chunks.
#pragma once
#include "layout.hpp"

namespace linea::cuda_detail::chunk_phases {

template <class Sh, int NT>
__device__ __forceinline__ void advance_state(const chunk_cta<Sh>& cx, float (&acc)[NT][4]) {
  using traits = typename Sh::traits;
  using E = typename Sh::E;
  constexpr int CL = Sh::CL, KP = Sh::KP, VP = Sh::VP, LDK = Sh::LDK, LDC = Sh::LDC;
  static_assert(NT == VP / 8, "the state tile: KP × VP");
  const auto& sm = cx.sm;
  const int warp = cx.warp;
#pragma unroll
  for (int e = 0; e < 4; e += 2) {
    const int i = 16 * warp + acc_row(e);
    const float gamma = (traits::per_key || traits::scalar) ? exp2_for<E>(sm.G(CL - 1, i)) : 1.f;
#pragma unroll
    for (int nt = 0; nt < VP / 8; ++nt) acc[nt][e] *= gamma, acc[nt][e + 1] *= gamma;
  }
#pragma unroll
  for (int q4 = 0; q4 < VP / 32; ++q4)
    mma_strip<E, 4>(*reinterpret_cast<float(*)[4][4]>(&acc[4 * q4][0]), sm.KdT + 16 * warp * LDC, LDC,
                    sm.UsT + 32 * q4 * LDC, LDC, CL / 16);
  if (cx.a.normalize)
    for (int d = cx.tid; d < KP; d += chunk_threads)
      for (int r = 0; r < CL; ++r) sm.zsum[d] += to_float(sm.Ks[r * LDK + d]);
}

}  // namespace linea::cuda_detail::chunk_phases
