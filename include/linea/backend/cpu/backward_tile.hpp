// linea/backend/cpu/backward_tile.hpp — the CPU backward's passes over one column tile of the state, a chunk of
// tokens at a time (backward_head.hpp; docs/math/backward.md §6).
//
// Why tiles: column j of S_t and of dS = dL/dS_t evolves on its own (u_j, du_j, S_{·j}, dS_{·j} depend only on
// column j); only the rows' dot products (dq̃, dk, de, d log α) sum over columns. So the chunk runs one tile of
// `columns` state columns at a time — recompute, then both adjoint passes over every token — with the tile of dS
// (columns · K values, 8 KiB at K = 128) in L1 and the tile's recomputed states ((C+1) · columns · K, ~0.5 MiB at
// C = 64) in L2, where the untiled passes streamed two 64 KiB states per pass through L2. Each tile adds its
// part of every row dot product to per-token sums.
//
// Layout: tiles are stored transposed, column by column ([column][row], rows padded to Kp, a multiple of the
// lane count): the vector lanes run over rows, so a row dot product over the tile's columns is a vertical sum
// (one accumulator per row block, no horizontal sum), and only the column sums du_j (and the recompute's
// recall u_j) take a horizontal sum, one per column and token.
//
//   recompute   per column j:  u_j = w_j − Σ_i c_i S_ij   (c = α ⊙ erase key; no sum without an erase)
//                              S'_ij = α_i S_ij + k_i u_j
//   adjoint     token b's correct/decay (on its S_{t−1}) fused with token a = b − 1's read/write (on its S_t, the
//               same matrix), per row block and column:
//                 b: sp_du_i += S_ij du_j;  dS_ij −= (e⊙k)_i du_j;  ds_sp_i += dS_ij S_ij;  dS_ij *= α_i
//                 a: dS_ij += c_i dr_j;  du_j += k_i dS_ij;  st_dr_i += S_ij dr_j;  ds_u_i += dS_ij u_j
#pragma once
#include <type_traits>

#include "../isa.hpp"
#include "simd.hpp"

namespace linea::cpu_backend::inline LINEA_ISA {

template <class R, class Arch>
struct backward_tile {
  using L = lanes<R, Arch>;
  using vec = typename L::type;
  static constexpr index_t width = L::size;
  // Columns per tile: the adjoint keeps one du accumulator per column in a register (16 on AVX-512's 32 vector
  // registers, 8 on the 16 of AVX2 and below).
  static constexpr index_t columns = sizeof(vec) >= 64 ? 16 : 8;

  // Token a's read/write coefficients: rows c_i = s q̃_i and k_i (Kp entries); columns dr_j, u_j of the tile.
  // Outputs: st_dr, ds_u += the tile's part (Kp entries); du_j of the tile's columns (written).
  struct read_write {
    const R *c, *k, *dr, *u;
    R *st_dr, *ds_u, *du;
  };
  // Token b's correct/decay coefficients: rows (e ⊙ k)_i and α_i; columns du_j (from its read/write). Outputs:
  // sp_du, ds_sp += the tile's part.
  struct correct_decay {
    const R *eki, *alpha, *du;
    R *sp_du, *ds_sp;
  };

  // S_next = Diag(α) S + k uᵀ with u = w − Sᵀ c over the tile (columns × Kp, transposed); u_j written.
  template <bool erase>
  static void recompute(const R* S, R* S_next, const R* alpha, const R* k, const R* c, const R* w, R* u,
                        index_t Kp) {
    for (index_t j = 0; j < columns; ++j) {
      const R* s = S + j * Kp;
      R* sn = S_next + j * Kp;
      R uj = w[j];
      if constexpr (erase) {
        vec a0 = L::splat(R(0)), a1 = a0;
        index_t i = 0;
        for (; i + 2 * width <= Kp; i += 2 * width) {
          a0 = L::fma(L::load(c + i), L::load(s + i), a0);
          a1 = L::fma(L::load(c + i + width), L::load(s + i + width), a1);
        }
        for (; i < Kp; i += width) a0 = L::fma(L::load(c + i), L::load(s + i), a0);
        uj -= lane_sum(a0 + a1);
      }
      u[j] = uj;
      const vec uv = L::splat(uj);
      for (index_t i = 0; i < Kp; i += width)
        L::store(sn + i, L::fma(L::load(alpha + i), L::load(s + i), L::load(k + i) * uv));
    }
  }

  // One pass over the tile's S (`S`, transposed) and dS (`dS`, transposed, updated in place): token b's
  // correct/decay (when `B`) then token a's read/write (when `A`). Without an erase or a decay, b's pass is the
  // identity and `B` must be false.
  template <bool A, bool B, bool erase, bool decay>
  static void adjoint(const R* S, R* dS, index_t Kp, const read_write& a, const correct_decay& b) {
    static_assert(!B || erase || decay);
    vec du[columns];
    if constexpr (A)
      for (index_t j = 0; j < columns; ++j) du[j] = L::splat(R(0));
    for (index_t i = 0; i < Kp; i += width) {
      vec ek{}, al{}, c{}, k{};
      vec sp_du = L::splat(R(0)), ds_sp = sp_du, st_dr = sp_du, ds_u = sp_du;
      if constexpr (B) ek = L::load(b.eki + i), al = L::load(b.alpha + i);
      if constexpr (A) c = L::load(a.c + i), k = L::load(a.k + i);
      for (index_t j = 0; j < columns; ++j) {
        const vec s = L::load(S + j * Kp + i);
        vec d = L::load(dS + j * Kp + i);
        if constexpr (B) {
          if constexpr (erase) {
            const vec dub = L::splat(b.du[j]);
            sp_du = L::fma(s, dub, sp_du);
            d = L::fma(-ek, dub, d);
          }
          if constexpr (decay) {
            ds_sp = L::fma(d, s, ds_sp);
            d = d * al;
          }
        }
        if constexpr (A) {
          const vec drj = L::splat(a.dr[j]);
          d = L::fma(c, drj, d);
          du[j] = L::fma(k, d, du[j]);
          st_dr = L::fma(s, drj, st_dr);
          ds_u = L::fma(d, L::splat(a.u[j]), ds_u);
        }
        L::store(dS + j * Kp + i, d);
      }
      if constexpr (B) {
        if constexpr (erase) L::store(b.sp_du + i, L::load(b.sp_du + i) + sp_du);
        if constexpr (decay) L::store(b.ds_sp + i, L::load(b.ds_sp + i) + ds_sp);
      }
      if constexpr (A) {
        L::store(a.st_dr + i, L::load(a.st_dr + i) + st_dr);
        L::store(a.ds_u + i, L::load(a.ds_u + i) + ds_u);
      }
    }
    if constexpr (A)
      for (index_t j = 0; j < columns; ++j) a.du[j] = lane_sum(du[j]);
  }

  static R lane_sum(const vec& x) {
    if constexpr (width == 1) return x;
    else return xsimd::hadd(x);
  }
};

}  // namespace linea::cpu_backend
