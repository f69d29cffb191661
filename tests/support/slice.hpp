// tests/support/slice.hpp — sub-views over time, for splitting one call into several (streaming, decode).
//
//   auto a1 = c.args();  a1.q = time_slice(a1.q, 0, 10);  ...   // tokens [0, 10) of every batch row
#pragma once
#include <linea/core/view.hpp>

namespace linea::testing {

// Tokens [t0, t1) of a view in logical order (b, t, ...): same strides, offset pointer, extent t1 − t0.
template <class T, int Rank>
view<T, Rank> time_slice(view<T, Rank> x, index_t t0, index_t t1) {
  static_assert(Rank >= 2, "time_slice: the view needs a time axis (axis 1)");
  if (x.empty()) return x;
  x.ptr += t0 * x.str[1];
  x.ext[1] = t1 - t0;
  return x;
}

// Batch rows [b0, b1) (or state rows [n0, n1)) of a view: axis 0.
template <class T, int Rank>
view<T, Rank> row_slice(view<T, Rank> x, index_t b0, index_t b1) {
  if (x.empty()) return x;
  x.ptr += b0 * x.str[0];
  x.ext[0] = b1 - b0;
  return x;
}

// Every time-indexed input and output of an arguments struct restricted to tokens [t0, t1).
template <class A>
A time_slice_args(A a, index_t t0, index_t t1) {
  a.q = time_slice(a.q, t0, t1), a.k = time_slice(a.k, t0, t1), a.v = time_slice(a.v, t0, t1);
  a.g = time_slice(a.g, t0, t1), a.gk = time_slice(a.gk, t0, t1), a.beta = time_slice(a.beta, t0, t1);
  a.b = time_slice(a.b, t0, t1), a.w = time_slice(a.w, t0, t1);
  a.o = time_slice(a.o, t0, t1), a.residual = time_slice(a.residual, t0, t1);
  return a;
}

}  // namespace linea::testing
