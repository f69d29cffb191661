// linea/backend/cpu/backward_rows.hpp — the passes over one K×V state row that the CPU backward makes per token,
// vectorised over the value lanes (xsimd, or one scalar lane).
//
// Rows have a padded length n, a multiple of the lane count; the backward keeps every padded entry zero (its
// value vectors are zero there), so no pass needs a tail loop. Row i of the state is S_i (V entries).
//
//   forward    recall     r += c S_i                                 (c = α_i e_i k_i)
//              write      S_i ← α_i S_{i} + k_i u                     (out of place: S_t from S_{t−1})
//   backward   read_write     dS_i += c_i dr;  du += k_i dS_i;  S_t,i·dr and dS_i·u            (docs/math/backward.md §6)
//              correct_decay  dS'_i = dS_i − e_i k_i du;  S_{t−1},i·du and dS'_i·S_{t−1},i;  dS_i ← α_i dS'_i
// The backward passes run over all K rows and return the rows' dot products in arrays.
#pragma once
#include <type_traits>
#include <utility>

#include "simd.hpp"

namespace linea::cpu_backend {

template <class R, class Arch>
struct backward_rows {
  using L = lanes<R, Arch>;
  using vec = typename L::type;
  static constexpr index_t width = L::size;

  // y += c x
  static void axpy(R* y, R c, const R* x, index_t n) {
    const vec cv = L::splat(c);
    for (index_t j = 0; j < n; j += width) L::store(y + j, L::fma(cv, L::load(x + j), L::load(y + j)));
  }

  // out = a x + b y
  static void combine(R* out, R a, const R* x, R b, const R* y, index_t n) {
    const vec av = L::splat(a), bv = L::splat(b);
    for (index_t j = 0; j < n; j += width) L::store(out + j, L::fma(av, L::load(x + j), bv * L::load(y + j)));
  }

  // The read's and the write's adjoint on rows [0, K) of the state: per row i, dS_i += c_i dr and du += k_i dS_i;
  // st_dr[i] = S_t,i · dr (s times it is dq̃_i) and ds_u[i] = dS_i · u (after the update; it adds to dk_i).
  static void read_write(const R* St, R* dS, const R* dr, R* du, const R* u, const R* c, const R* k, index_t K,
                         index_t n, R* st_dr, R* ds_u) {
    row_blocks(K, st_dr, ds_u, [&](index_t i, vec& a1, vec& a2) {
      const R* s = St + i * n;
      R* d_row = dS + i * n;
      const vec cv = L::splat(c[i]), kv = L::splat(k[i]);
      for (index_t j = 0; j < n; j += width) {
        const vec drj = L::load(dr + j);
        const vec d = L::fma(cv, drj, L::load(d_row + j));
        L::store(d_row + j, d);
        L::store(du + j, L::fma(kv, d, L::load(du + j)));
        a1 = L::fma(L::load(s + j), drj, a1);
        a2 = L::fma(d, L::load(u + j), a2);
      }
    });
  }

  // The correction's and the decay's adjoint on rows [0, K), given S_{t−1} (`Sp`): per row i,
  // dS'_i = dS_i − eki_i du (eki = e ⊙ k), sp_du[i] = Sp_i · du, ds_sp[i] = dS'_i · Sp_i, and dS_i ← α_i dS'_i.
  // Without an erase sp_du is not computed; without a decay ds_sp is not (and dS_i is not scaled).
  template <bool erase, bool decay>
  static void correct_decay(const R* Sp, R* dS, const R* du, const R* alpha, const R* eki, index_t K, index_t n,
                            R* sp_du, R* ds_sp) {
    if constexpr (!erase && !decay) return;
    row_blocks(K, sp_du, ds_sp, [&](index_t i, vec& a1, vec& a2) {
      const R* s_row = Sp + i * n;
      R* d_row = dS + i * n;
      const vec av = L::splat(alpha[i]), ev = L::splat(eki[i]);
      for (index_t j = 0; j < n; j += width) {
        const vec s = L::load(s_row + j);
        vec d = L::load(d_row + j);
        if constexpr (erase) {
          const vec duj = L::load(du + j);
          a1 = L::fma(s, duj, a1);
          d = L::fma(-ev, duj, d);
        }
        if constexpr (decay) {
          a2 = L::fma(d, s, a2);
          d = d * av;
        }
        L::store(d_row + j, d);
      }
    });
  }

 private:
  // Runs row(i, a1, a2) for i in [0, K) with two zeroed vector accumulators each, and stores their lane sums in
  // out1[i], out2[i]. (xsimd 8.1's haddp, which would sum a block of rows at once, permutes lanes 2–5 and 10–13
  // of its AVX-512 float result, so each row is summed on its own.)
  template <class Row>
  static void row_blocks(index_t K, R* out1, R* out2, Row&& row) {
    for (index_t i = 0; i < K; ++i) {
      vec a1 = L::splat(R(0)), a2 = L::splat(R(0));
      row(i, a1, a2);
      out1[i] = lane_sum(a1), out2[i] = lane_sum(a2);
    }
  }

  static R lane_sum(const vec& x) {
    if constexpr (width == 1) {
      return x;
    } else {
      alignas(64) R buf[width];
      L::store(buf, x);
      R s = 0;
      for (index_t l = 0; l < width; ++l) s += buf[l];
      return s;
    }
  }
};

}  // namespace linea::cpu_backend
