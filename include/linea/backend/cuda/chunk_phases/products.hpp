// linea/backend/cuda/chunk_phases/products.hpp — the masked decayed products of a chunk (the device side of
// chunk/products.hpp):
//   P = (Q Kᵀ ⊙ decay) for s ≤ r,   A = (erase key Kᵀ ⊙ decay) for s < r (delta family; kept transposed, fp32)
// No decay or a scalar one factors out: one 16×32 product per (P | A) × row block, times 2^(G_r − G_s) (≤ 1 where
// it is kept). Per-key decays do not (2^(−G) would overflow), so the chunk is cut once more:
//   - rows 16..31 × columns 0..15 on tensor cores, through row 15 (the operands decay_channel built);
//   - for 16-bit operands, inside each 16-row half, rows 8..15 × columns 0..7 through row 7 (split8);
//   - the remaining diagonal blocks (8×8, or 16×16 for float operands) summed in log space, spread over all
//     threads so that no lane idles on the masked half (secondary chunking, SPEC §4).
// Only the entries written here are nonzero: clear_products zeroed P and A before. States only (kernel_args::
// states_only: no outputs are read) leaves P out where it has products of its own: its 16×32 strips (no decay or a
// scalar one), its off-diagonal sub-block and its log-space diagonal entries (per-key decays; the split8 tile holds
// P and A together and stays).
#pragma once
#include "layout.hpp"

namespace linea::cuda_detail::chunk_phases {

template <class Sh>
__device__ __forceinline__ void decayed_products(const chunk_cta<Sh>& cx) {
  using traits = typename Sh::traits;
  using E = typename Sh::E;
  constexpr int CL = Sh::CL, KP = Sh::KP, LDK = Sh::LDK, LDC = Sh::LDC, LDM = Sh::LDM, LDG = Sh::LDG, NW = Sh::NW;
  const auto& sm = cx.sm;
  E *Qs = sm.Qs, *Ks = sm.Ks, *EK = sm.EK, *Pe = sm.Pe;
  float* Ms = sm.Ms;
  const int pa_warp = (cx.warp - Sh::spare + NW) % NW;  // the warps without a strip of Z come first
  const bool outputs = !cx.a.states_only;
  if constexpr (!traits::per_key) {
    // P = Q Kᵀ and A = bK Kᵀ, decays as a row/column factor (G_r − G_s ≤ 0 on and below the diagonal).
    constexpr int jobs = traits::erases ? 4 : 2;  // (P | A) × two row blocks, 16×32 each
    for (int job = pa_warp; job < jobs; job += NW) {
      const bool is_a = job >= 2;
      if (!is_a && !outputs) continue;
      const int r0 = 16 * (job % 2);
      float c[4][4] = {};
      mma_strip<E, 4>(c, (is_a ? EK : Qs) + r0 * LDK, LDK, Ks, LDK, KP / 16);
#pragma unroll
      for (int t = 0; t < 4; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = r0 + acc_row(e), s = 8 * t + acc_col(e);
          if (is_a ? s < r : s <= r) {
            const float x = c[t][e] * exp2_for<E>(sm.G(r, 0) - sm.G(s, 0));
            if (is_a) Ms[s * LDM + r] = x;  // A is kept transposed (the solve reads its columns)
            else Pe[r * LDC + s] = from_float<E>(x);
          }
        }
    }
  } else {
    E *OF = sm.OF, *OE = sm.OE, *D8 = sm.D8;
    const float* Gs = sm.Gs;
    // Off-diagonal sub-block (rows 16..31, columns 0..15) on tensor cores, through row 15.
    if (pa_warp < (traits::erases ? 2 : 1) && (pa_warp == 1 || outputs)) {
      const bool is_a = pa_warp == 1;
      float c[2][4] = {};
#pragma unroll
      for (int t = 0; t < 2; ++t) mma_tile<E>(c[t], (is_a ? OE : OF) + 16 * LDK, LDK, OF + 8 * t * LDK, LDK, KP / 16);
#pragma unroll
      for (int t = 0; t < 2; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = 16 + acc_row(e), s = 8 * t + acc_col(e);
          if (is_a) Ms[s * LDM + r] = c[t][e];
          else Pe[r * LDC + s] = from_float<E>(c[t][e]);
        }
    }
    if constexpr (Sh::split8) {  // the 8×8 blocks below the 8×8 diagonal: P in rows 0..7, A in rows 8..15
      if (pa_warp >= 2 && pa_warp < 4) {
        const int h = pa_warp - 2;
        float c[4] = {};
        mma_tile<E>(c, D8 + 16 * h * LDK, LDK, OE + 8 * h * LDK, LDK, KP / 16);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = acc_row(e), s = 16 * h + acc_col(e);
          if (row < 8) Pe[(16 * h + 8 + row) * LDC + s] = from_float<E>(c[e]);
          else if (traits::erases) Ms[s * LDM + 16 * h + row] = c[e];  // row 8 + i of the tile is A's row 16h + 8 + i
        }
      }
    }
    // Diagonal blocks (DB×DB) in log space: the entries s ≤ r (P) or s < r (A) of each, spread over all warps so
    // that no lane idles on the masked half.
    constexpr int DB = Sh::split8 ? 8 : 16, nP = DB * (DB + 1) / 2, nA = DB * (DB - 1) / 2;  // entries per block
    constexpr int total = (CL / DB) * (nP + (traits::erases ? nA : 0));
    for (int x = cx.tid + (outputs ? 0 : (CL / DB) * nP); x < total; x += chunk_threads) {  // states only: A's alone
      const bool is_a = x >= (CL / DB) * nP;
      const int y = is_a ? x - (CL / DB) * nP : x, block = is_a ? y / nA : y / nP, idx = is_a ? y % nA : y % nP;
      // idx → (row, column) within the triangle, with or without the diagonal
      int rr = static_cast<int>((sqrtf(8.f * idx + 1.f) - 1.f) * 0.5f);
      if (is_a) rr = static_cast<int>((sqrtf(8.f * idx + 1.f) + 1.f) * 0.5f);
      int base = is_a ? rr * (rr - 1) / 2 : rr * (rr + 1) / 2;
      while (base > idx) --rr, base = is_a ? rr * (rr - 1) / 2 : rr * (rr + 1) / 2;
      while ((is_a ? (rr + 1) * rr / 2 : (rr + 1) * (rr + 2) / 2) <= idx)
        ++rr, base = is_a ? rr * (rr - 1) / 2 : rr * (rr + 1) / 2;
      const int r = DB * block + rr, sc = DB * block + (idx - base);
      const E* X = is_a ? EK : Qs;
      float sum = 0;
      // four channels per step: 8-byte operand and 16-byte decay reads (padded rows: no bank conflicts)
      for (int d = 0; d < KP; d += 4) {
        float xv[4], kv[4], gr[4], gs[4];
        load_n<4>(X + r * LDK + d, xv);
        load_n<4>(Ks + sc * LDK + d, kv);
        load_n<4>(Gs + r * LDG + d, gr);
        load_n<4>(Gs + sc * LDG + d, gs);
#pragma unroll
        for (int u = 0; u < 4; ++u) sum = fmaf(xv[u] * kv[u], exp2_for<E>(gr[u] - gs[u]), sum);
      }
      if (is_a) Ms[sc * LDM + r] = sum;
      else Pe[r * LDC + sc] = from_float<E>(sum);
    }
  }
}

}  // namespace linea::cuda_detail::chunk_phases
