// tests/support/compare.hpp — relative error of a result against a float64 truth, and finiteness.
#pragma once
#include <cmath>
#include <cstddef>
#include <vector>

#include <linea/core/relative_error.hpp>
#include <linea/tensor.hpp>

namespace linea::testing {

// ‖x − ref‖₂ / ‖ref‖₂ (absolute error when ‖ref‖ = 0).
template <class X, class R>
double relative_error(const X* x, const R* ref, std::size_t n) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - static_cast<double>(ref[i]);
    num += d * d;
    den += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// linea::relative_error (core/relative_error.hpp) over two tensors.
template <class X, class R, int Rank>
double relative_error(const tensor<X, Rank>& x, const tensor<R, Rank>& ref) {
  return linea::relative_error(x.view_of(), ref.view_of());
}

template <class X, int Rank>
bool all_finite(const tensor<X, Rank>& x) {
  for (const X& e : x.values())
    if (!std::isfinite(static_cast<double>(e))) return false;
  return true;
}

}  // namespace linea::testing
