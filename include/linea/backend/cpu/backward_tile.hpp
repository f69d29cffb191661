// linea/backend/cpu/backward_tile.hpp — the CPU backward's passes over one column tile of the state, a chunk of
// tokens at a time (backward_head.hpp; docs/math/backward.md §7).
//
// Why tiles: column j of S_t and of dS = dL/dS_t evolves on its own (u_j, du_j, S_{·j}, dS_{·j} depend only on
// column j); only the rows' dot products (dq̃, dk, de, d log α) sum over columns. So the chunk runs one tile of
// `columns` state columns at a time — recompute, then both adjoint passes over every token — with the tile of dS
// (columns · K values, 8 KiB at K = 128) in L1 and the tile's recomputed states ((C+1) · columns · K, ~0.5 MiB at
// C = 64) in L2, where the untiled passes streamed two 64 KiB states per pass through L2. Each tile adds its
// part of every row dot product to per-token sums.
//
// Layout: the vector lanes run over rows, so a row dot product over the tile's columns is a vertical sum (one
// accumulator per row block, no horizontal sum), and only the column sums du_j (and the recompute's recall u_j)
// take a horizontal sum, one per column and token. A tile is stored by row blocks of `width` rows (rows padded
// to Kp, a multiple of width), each block column by column: entry (i, j) at (i / width)·block + j·width +
// i % width (at(i, j)), so one row block of the tile is `block` contiguous values at fixed offsets, and the
// column loop is unrolled (each_column) with its accumulators in registers.
//
//   recompute   per column j:  u_j = w_j − Σ_i c_i S_ij   (c = α ⊙ erase key; no sum without an erase)
//                              S'_ij = α_i S_ij + k_i u_j
//   adjoint     token b's correct/decay (on its S_{t−1}) fused with token a = b − 1's read/write (on its S_t, the
//               same matrix), per row block and column:
//                 b: sp_du_i += S_ij du_j;  dS_ij −= (e⊙k)_i du_j;  ds_sp_i += dS_ij S_ij;  dS_ij *= α_i
//                 a: dS_ij += c_i dr_j;  du_j += k_i dS_ij;  st_dr_i += S_ij dr_j;  ds_u_i += dS_ij u_j
//
// A rule with neither erase nor decay (linear attention) reads S in the adjoint only for st_dr = S_t dr: its
// recompute sums st_dr instead, while S_t is in registers, and runs in place on one tile in L1, so no states are
// kept (backward_head.hpp). (Moving st_dr there for the other rules measured slower: their recompute streams the
// kept states to L2 and the adjoint loads S anyway.)
#pragma once
#include <type_traits>
#include <utility>

#include "../../config.hpp"
#include "../isa.hpp"
#include "simd.hpp"

// Inlines every call in the function (the per-column lambdas and the vector operations).
#ifndef LINEA_TILE_FLATTEN
#if defined(__GNUC__) || defined(__clang__)
#define LINEA_TILE_FLATTEN __attribute__((flatten))
#else
#define LINEA_TILE_FLATTEN
#endif
#endif

namespace linea::cpu_backend::inline LINEA_ISA {

template <class R, class Arch>
struct backward_tile {
  using L = lanes<R, Arch>;
  using vec = typename L::type;
  static constexpr index_t width = L::size;
  // Columns per tile: the adjoint keeps one du accumulator per column in a register (16 on AVX-512's 32 vector
  // registers, 8 on the 16 of AVX2 and below).
  static constexpr index_t columns = sizeof(vec) >= 64 ? 16 : 8;
  static constexpr index_t block = columns * width;  // values per row block of a tile
  static constexpr index_t at(index_t i, index_t j) { return i / width * block + j * width + i % width; }

  // f(j) for j = 0 … columns − 1 as compile-time constants: unrolled, so per-column values stay in registers.
  // (The passes below are LINEA_TILE_FLATTEN: GCC otherwise kept the unrolled body out of line, reloading every
  // captured pointer per column, and the recompute ran slower than the untiled one.)
  template <class F>
  LINEA_INLINE static void each_column(F&& f) {
    each_column(f, std::make_integer_sequence<index_t, columns>{});
  }
  template <class F, index_t... J>
  LINEA_INLINE static void each_column(F& f, std::integer_sequence<index_t, J...>) {
    (f(std::integral_constant<index_t, J>{}), ...);
  }

  // Token a's read/write coefficients: rows c_i = s q̃_i and k_i (Kp entries); columns dr_j, u_j of the tile.
  // Outputs: st_dr (only where the rule keeps its states: else the recompute's), ds_u += the tile's part (Kp
  // entries); du_j of the tile's columns (written).
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

  // Whether the adjoint reads S: with an erase or a decay; else the recompute sums st_dr (file comment).
  template <bool erase, bool decay>
  static constexpr bool keeps_states = erase || decay;

  // S_next = Diag(α) S + k uᵀ with u = w − Sᵀ c over the tile (rows [0, Kp)); u_j written. Without an erase or a
  // decay, also st_dr += the tile's part of S_next dr (Kp entries); S_next may then be S (in place: each entry is
  // read before it is written).
  template <bool erase, bool decay>
  LINEA_TILE_FLATTEN static void recompute(const R* S, R* S_next, const R* alpha, const R* k, const R* c, const R* w, R* u,
                                           const R* dr, R* st_dr, index_t Kp) {
    constexpr bool reads = !keeps_states<erase, decay>;
    vec uv[columns];
    if constexpr (erase) {
      vec acc[columns];
      each_column([&](auto j) { acc[j] = L::splat(R(0)); });
      for (index_t i = 0; i < Kp; i += width) {
        const vec cv = L::load(c + i);
        const R* s = S + i / width * block;
        each_column([&](auto j) { acc[j] = L::fma(cv, L::load(s + j * width), acc[j]); });
      }
      each_column([&](auto j) { u[j] = w[j] - lane_sum(acc[j]); });
    } else {
      each_column([&](auto j) { u[j] = w[j]; });
    }
    each_column([&](auto j) { uv[j] = L::splat(u[j]); });
    for (index_t i = 0; i < Kp; i += width) {
      const vec av = L::load(alpha + i), kv = L::load(k + i);
      const R* s = S + i / width * block;
      R* sn = S_next + i / width * block;
      if constexpr (reads) {  // α = 1; S_t dr in four partial sums (one would wait an FMA's latency per column)
        vec read[4];
        for (auto& x : read) x = L::splat(R(0));
        each_column([&](auto j) {
          const vec next = L::fma(kv, uv[j], L::load(s + j * width));
          read[j % 4] = L::fma(next, L::splat(dr[j]), read[j % 4]);
          L::store(sn + j * width, next);
        });
        L::store(st_dr + i, L::load(st_dr + i) + ((read[0] + read[1]) + (read[2] + read[3])));
      } else {
        each_column([&](auto j) { L::store(sn + j * width, L::fma(av, L::load(s + j * width), kv * uv[j])); });
      }
    }
  }

  // One pass over the tile's S (`S`, unread without an erase or a decay) and dS (`dS`, updated in place): token b's
  // correct/decay (when `B`) then token a's read/write (when `A`). Without an erase or a decay, b's pass is the
  // identity and `B` must be false, and a's st_dr is the recompute's.
  template <bool A, bool B, bool erase, bool decay>
  LINEA_TILE_FLATTEN static void adjoint(const R* S, R* dS, index_t Kp, const read_write& a, const correct_decay& b) {
    static_assert(!B || erase || decay);
    constexpr bool keeps = keeps_states<erase, decay>;
    vec du[columns];
    if constexpr (A) each_column([&](auto j) { du[j] = L::splat(R(0)); });
    for (index_t i = 0; i < Kp; i += width) {
      vec ek{}, al{}, c{}, k{};
      vec sp_du = L::splat(R(0)), ds_sp = sp_du, st_dr = sp_du, ds_u = sp_du;
      if constexpr (B) ek = L::load(b.eki + i), al = L::load(b.alpha + i);
      if constexpr (A) c = L::load(a.c + i), k = L::load(a.k + i);
      const R* s_block = S + i / width * block;
      R* d_block = dS + i / width * block;
      each_column([&](auto j) {
        vec s{};
        if constexpr (keeps) s = L::load(s_block + j * width);
        vec d = L::load(d_block + j * width);
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
          if constexpr (keeps) st_dr = L::fma(s, drj, st_dr);
          ds_u = L::fma(d, L::splat(a.u[j]), ds_u);
        }
        L::store(d_block + j * width, d);
      });
      if constexpr (B) {
        if constexpr (erase) L::store(b.sp_du + i, L::load(b.sp_du + i) + sp_du);
        if constexpr (decay) L::store(b.ds_sp + i, L::load(b.ds_sp + i) + ds_sp);
      }
      if constexpr (A) {
        if constexpr (keeps) L::store(a.st_dr + i, L::load(a.st_dr + i) + st_dr);
        L::store(a.ds_u + i, L::load(a.ds_u + i) + ds_u);
      }
    }
    if constexpr (A) each_column([&](auto j) { a.du[j] = lane_sum(du[j]); });
  }

  static R lane_sum(const vec& x) {
    if constexpr (width == 1) return x;
    else return xsimd::hadd(x);
  }
};

}  // namespace linea::cpu_backend
