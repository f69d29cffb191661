// linea/backend/cuda/chunk_phases/decay.hpp — the in-chunk cumulative log decays G (base 2) and the decayed operands
// built from them (the device side of chunk/decay.hpp). Only exponents ≤ 0 are formed, never exp(−G) alone. The log
// decays arrive clamped at tiles::log2_zero (gather.hpp), so a gate of exactly 0 never makes a difference −inf − (−inf):
//   decay_channel       a thread per key channel d: G_·d cumulated in place (per key) or read (scalar),
//                       K_d = K ⊙ 2^(G_C − G) (transposed), the erase key ⊙ 2^G, and for per-key decays the
//                       operands of the off-diagonal sub-blocks, each through the last row of its column block
//   scan_scalar_decays  one warp: the inclusive scan of the scalar log decays
//   clear_products      the other threads: P and A to zero (the products write only their nonzero entries)
//   decay_queries       Q ← Q ⊙ 2^G, four channels at a time (after the products, while the solve runs)
#pragma once
#include "layout.hpp"

namespace linea::cuda_detail::chunk_phases {

template <class Sh>
__device__ __forceinline__ void decay_channel(const chunk_cta<Sh>& cx, int d) {
  using traits = typename Sh::traits;
  using E = typename Sh::E;
  constexpr int CL = Sh::CL, LDK = Sh::LDK, LDC = Sh::LDC, LDG = Sh::LDG;
  const auto& sm = cx.sm;
  float g_run[CL];
  float run = 0;
#pragma unroll
  for (int r = 0; r < CL; ++r) {
    if constexpr (traits::per_key) run = sm.Gs[r * LDG + d] += run;
    else if constexpr (traits::scalar) run += sm.gsc[r];
    g_run[r] = run;
  }
  float kd[2];  // K_d of rows r − 1 and r: stored as one pair (a transposed tile, half the store requests)
#pragma unroll
  for (int r = 0; r < CL; ++r) {
    const float k = to_float(sm.Ks[r * LDK + d]);
    kd[r & 1] = k * exp2_for<E>(g_run[CL - 1] - g_run[r]);
    if (r & 1) store_n<2>(sm.KdT + d * LDC + r - 1, kd);
    if constexpr (traits::per_key) {
      const float e = traits::erases ? to_float(sm.EK[r * LDK + d]) : 0.f;
      if constexpr (traits::erases) sm.XG[r * LDK + d] = from_float<E>(e * exp2_for<E>(g_run[r]));
      // off-diagonal sub-block (rows 16..31 × columns 0..15) through row 15: both factors ≤ 1
      if (r < 16) {
        sm.OF[r * LDK + d] = from_float<E>(k * exp2_for<E>(g_run[15] - g_run[r]));
      } else {
        sm.OF[r * LDK + d] = from_float<E>(to_float(sm.Qs[r * LDK + d]) * exp2_for<E>(g_run[r] - g_run[15]));
        if constexpr (traits::erases) sm.OE[r * LDK + d] = from_float<E>(e * exp2_for<E>(g_run[r] - g_run[15]));
      }
      if constexpr (Sh::split8) {  // inside half h: rows 8..15 against columns 0..7, through row m = 16h + 7
        const int h = r / 16, m = 16 * h + 7, rl = r % 16;
        if (rl < 8) {
          sm.OE[(8 * h + rl) * LDK + d] = from_float<E>(k * exp2_for<E>(g_run[m] - g_run[r]));
        } else {
          sm.D8[(16 * h + rl - 8) * LDK + d] = from_float<E>(to_float(sm.Qs[r * LDK + d]) * exp2_for<E>(g_run[r] - g_run[m]));
          if constexpr (traits::erases) sm.D8[(16 * h + rl) * LDK + d] = from_float<E>(e * exp2_for<E>(g_run[r] - g_run[m]));
        }
      }
    }
  }
}

template <class Sh>
__device__ __forceinline__ void scan_scalar_decays(const chunk_cta<Sh>& cx) {
  using traits = typename Sh::traits;
  if constexpr (traits::scalar && !traits::per_key) {
    const int lane = cx.lane;
    float x = cx.sm.gsc[lane];
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const float y = __shfl_up_sync(0xffffffffu, x, o);
      if (lane >= o) x += y;
    }
    cx.sm.gcum[lane] = x;
  }
}

// Thread i of n clears its share.
template <class Sh>
__device__ __forceinline__ void clear_products(const chunk_cta<Sh>& cx, int i, int n) {
  using E = typename Sh::E;
  for (int x = i; x < Sh::CL * Sh::LDC; x += n) cx.sm.Pe[x] = from_float<E>(0.f);
  if constexpr (Sh::traits::erases)
    for (int x = i; x < Sh::CL * Sh::LDM; x += n) cx.sm.Ms[x] = 0.f;
}

// Thread i of n: Q ← Q ⊙ Γ (four channels at a time).
template <class Sh>
__device__ __forceinline__ void decay_queries(const chunk_cta<Sh>& cx, int i, int n) {
  using traits = typename Sh::traits;
  using E = typename Sh::E;
  constexpr int CL = Sh::CL, KP = Sh::KP, LDK = Sh::LDK, LDG = Sh::LDG;
  const auto& sm = cx.sm;
  if constexpr (traits::per_key || traits::scalar) {
    for (int x = i; x < CL * KP / 4; x += n) {
      const int r = x / (KP / 4), d = 4 * (x % (KP / 4));
      float qv[4], gv[4];
      load_n<4>(sm.Qs + r * LDK + d, qv);
      if constexpr (traits::per_key) load_n<4>(sm.Gs + r * LDG + d, gv);
#pragma unroll
      for (int u = 0; u < 4; ++u) qv[u] *= exp2_for<E>(traits::per_key ? gv[u] : sm.gcum[r]);
      store_n<4>(sm.Qs + r * LDK + d, qv);
    }
  }
}

}  // namespace linea::cuda_detail::chunk_phases
