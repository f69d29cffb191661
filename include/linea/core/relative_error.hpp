// linea/core/relative_error.hpp — ‖x − ref‖₂ / ‖ref‖₂ over two views of one shape: how SPEC §5 measures a result
// against the float64 reference, shared by the examples, the tests and users.
//
//   double e = linea::relative_error(o_view, o_ref_view);   // e.g. ≤ 1e-5 for float32 (SPEC §5)
//
// Summed in double over every element the views reach (any strides). When ‖ref‖ = 0 it is the absolute error ‖x‖.
// Views of different shapes are a linea::error.
#pragma once
#include <cmath>
#include <string>

#include "error.hpp"
#include "view.hpp"

namespace linea {

namespace detail {

template <int Axis, class X, class R, int Rank>
void sum_squares(const view<X, Rank>& x, const view<R, Rank>& ref, index_t off_x, index_t off_r, double& num,
                 double& den) {
  for (index_t i = 0; i < x.extent(Axis); ++i) {
    const index_t ox = off_x + i * x.stride(Axis), orf = off_r + i * ref.stride(Axis);
    if constexpr (Axis + 1 < Rank) {
      sum_squares<Axis + 1>(x, ref, ox, orf, num, den);
    } else {
      const double r = static_cast<double>(ref.ptr[orf]), d = static_cast<double>(x.ptr[ox]) - r;
      num += d * d, den += r * r;
    }
  }
}

}  // namespace detail

template <class X, class R, int Rank>
double relative_error(const view<X, Rank>& x, const view<R, Rank>& ref) {
  for (int r = 0; r < Rank; ++r)
    if (x.extent(r) != ref.extent(r))
      throw error("relative_error: the views have shapes " + shape_string(x) + " and " + shape_string(ref));
  if (x.size() == 0) return 0;
  double num = 0, den = 0;
  detail::sum_squares<0>(x, ref, 0, 0, num, den);
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace linea
