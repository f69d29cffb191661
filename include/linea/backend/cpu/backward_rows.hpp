// linea/backend/cpu/backward_rows.hpp — the passes over one K×V state row that the CPU backward makes per token,
// vectorised over the value lanes (xsimd, or one scalar lane).
//
// Rows have a padded length n, a multiple of the lane count; the backward keeps every padded entry zero (its
// value vectors are zero there), so no pass needs a tail loop. Row i of the state is S_i (V entries).
//
//   forward    recall     r += c S_i                                 (c = α_i e_i k_i)
//              write      S_i ← α_i S_{i} + k_i u                     (out of place: S_t from S_{t−1})
//   backward   read_write dS_i += c dr;  du += k_i dS_i;  returns (S_t,i·dr, dS_i·u)      (docs/math/backward.md §1)
//              correct_decay  dS'_i = dS_i − e_i k_i du;  a1 = S_{t−1},i·du,  a2 = dS'_i·S_{t−1},i,  dS_i ← α_i dS'_i
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

  // Σ of the lanes (through memory: xsimd 8's hadd trips GCC 12's -Wmaybe-uninitialized in its AVX-512 path).
  static R sum(const vec& x) {
    if constexpr (std::is_same_v<Arch, backend::scalar_arch>) {
      return x;
    } else {
      alignas(64) R buf[width];
      L::store(buf, x);
      R s = 0;
      for (index_t l = 0; l < width; ++l) s += buf[l];
      return s;
    }
  }

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

  // The read's and the write's adjoint on row i: dS_i += c dr (c = s q̃_i), du += k_i dS_i. Returns
  // {S_t,i · dr, dS_i · u} (dS_i after the update): s times the first is dq̃_i, the second adds to dk_i.
  static std::pair<R, R> read_write(const R* St, R* dS, const R* dr, R* du, const R* u, R c, R ki, index_t n) {
    const vec cv = L::splat(c), kv = L::splat(ki);
    vec s_dr = L::splat(R(0)), ds_u = L::splat(R(0));
    for (index_t j = 0; j < n; j += width) {
      const vec drj = L::load(dr + j);
      const vec d = L::fma(cv, drj, L::load(dS + j));
      L::store(dS + j, d);
      L::store(du + j, L::fma(kv, d, L::load(du + j)));
      s_dr = L::fma(L::load(St + j), drj, s_dr);
      ds_u = L::fma(d, L::load(u + j), ds_u);
    }
    return {sum(s_dr), sum(ds_u)};
  }

  // The correction's and the decay's adjoint on row i, given S_{t−1} row `Sp`: dS'_i = dS_i − eki du (eki = e_i k_i),
  // returns {Sp · du, dS'_i · Sp} and sets dS_i ← α_i dS'_i. Without an erase (eki = 0) the first is not needed;
  // without a decay the second is not.
  template <bool erase, bool decay>
  static std::pair<R, R> correct_decay(const R* Sp, R* dS, const R* du, R alpha, R eki, index_t n) {
    const vec av = L::splat(alpha), ev = L::splat(eki);
    vec sp_du = L::splat(R(0)), ds_sp = L::splat(R(0));
    for (index_t j = 0; j < n; j += width) {
      const vec s = L::load(Sp + j);
      vec d = L::load(dS + j);
      if constexpr (erase) {
        const vec duj = L::load(du + j);
        sp_du = L::fma(s, duj, sp_du);
        d = L::fma(-ev, duj, d);
      }
      if constexpr (decay) {
        ds_sp = L::fma(d, s, ds_sp);
        d = d * av;
      }
      L::store(dS + j, d);
    }
    return {erase ? sum(sp_du) : R(0), decay ? sum(ds_sp) : R(0)};
  }
};

}  // namespace linea::cpu_backend
