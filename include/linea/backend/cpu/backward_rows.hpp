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

#include "../isa.hpp"
#include "simd.hpp"

namespace linea::cpu_backend::inline LINEA_ISA {

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

  // y += Σ_i c_i X_i over rows [0, K) of X (row stride n): four rows per pass over y, so y is loaded and stored
  // once per four rows instead of once per row.
  static void recall(R* y, const R* c, const R* X, index_t K, index_t n) {
    index_t i = 0;
    for (; i + 4 <= K; i += 4) {
      const vec c0 = L::splat(c[i]), c1 = L::splat(c[i + 1]), c2 = L::splat(c[i + 2]), c3 = L::splat(c[i + 3]);
      const R *x0 = X + i * n, *x1 = x0 + n, *x2 = x1 + n, *x3 = x2 + n;
      for (index_t j = 0; j < n; j += width) {
        const vec a = L::fma(c0, L::load(x0 + j), c1 * L::load(x1 + j));
        const vec b = L::fma(c2, L::load(x2 + j), c3 * L::load(x3 + j));
        L::store(y + j, L::load(y + j) + (a + b));
      }
    }
    for (; i < K; ++i) axpy(y, c[i], X + i * n, n);
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
    index_t i0 = 0;
    for (; i0 + 2 <= K; i0 += 2) {  // two rows per pass over du
      vec a1 = L::splat(R(0)), a2 = a1, b1 = a1, b2 = a1;
      const R *s0 = St + i0 * n, *s1 = s0 + n;
      R *d0 = dS + i0 * n, *d1 = d0 + n;
      const vec c0 = L::splat(c[i0]), c1 = L::splat(c[i0 + 1]), k0 = L::splat(k[i0]), k1 = L::splat(k[i0 + 1]);
      for (index_t j = 0; j < n; j += width) {
        const vec drj = L::load(dr + j), uj = L::load(u + j);
        const vec e0 = L::fma(c0, drj, L::load(d0 + j)), e1 = L::fma(c1, drj, L::load(d1 + j));
        L::store(d0 + j, e0);
        L::store(d1 + j, e1);
        L::store(du + j, L::fma(k0, e0, L::fma(k1, e1, L::load(du + j))));
        a1 = L::fma(L::load(s0 + j), drj, a1);
        b1 = L::fma(L::load(s1 + j), drj, b1);
        a2 = L::fma(e0, uj, a2);
        b2 = L::fma(e1, uj, b2);
      }
      st_dr[i0] = lane_sum(a1), st_dr[i0 + 1] = lane_sum(b1);
      ds_u[i0] = lane_sum(a2), ds_u[i0 + 1] = lane_sum(b2);
    }
    if (i0 == K) return;
    row_blocks(K - i0, st_dr + i0, ds_u + i0, [&](index_t r, vec& a1, vec& a2) {
      const index_t i = i0 + r;
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
      return xsimd::hadd(x);  // a shuffle tree (16 scalar adds through memory took a third of the backward's time)
    }
  }
};

}  // namespace linea::cpu_backend
