// linea::relative_error (core/relative_error.hpp): ‖x − ref‖₂ / ‖ref‖₂ over two views of one shape, any strides.
#include <cmath>
#include <vector>

#include <doctest/doctest.h>

#include <linea/core/relative_error.hpp>

#include "support/rejection.hpp"

using namespace linea;
using namespace linea::testing;

TEST_CASE("relative_error: the norm ratio, over strided views and mixed types") {
  const std::vector<double> ref{3, 0, 4, 0};            // ‖ref‖ = 5
  const std::vector<float> x{3, 0, 4.5f, 1};
  const auto r = contiguous<1>(ref, {4});
  const auto v = contiguous<1>(x, {4});
  CHECK(relative_error(v, r) == doctest::Approx(std::sqrt(0.25 + 1.0) / 5.0));
  CHECK(relative_error(r, r) == 0.0);
  // Every second element: [3, 4] against [3, 4.5].
  CHECK(relative_error(strided<1>(x, {2}, {2}), strided<1>(ref, {2}, {2})) == doctest::Approx(0.5 / 5.0));
  // Head-first against time-major: the same logical tensor, so no error.
  std::vector<float> tm(2 * 3 * 4), hf(tm.size());
  for (int t = 0; t < 3; ++t)
    for (int h = 0; h < 4; ++h) tm[t * 4 + h] = tm[12 + t * 4 + h] = hf[h * 3 + t] = hf[12 + h * 3 + t] = float(t - h);
  CHECK(relative_error(contiguous<3>(tm, {2, 3, 4}), strided<3>(hf, {2, 3, 4}, {12, 1, 3})) == 0.0);
  // A zero reference: the absolute error ‖x‖ = √(9 + 20.25 + 1).
  const std::vector<double> zero(4, 0.0);
  CHECK(relative_error(v, contiguous<1>(zero, {4})) == doctest::Approx(5.5));
}

TEST_CASE("relative_error: views of different shapes are an error naming both shapes") {
  const std::vector<float> x(12);
  expect_error([&] { (void)relative_error(contiguous<2>(x, {3, 4}), contiguous<2>(x, {4, 3})); },
               {"relative_error", "[3, 4]", "[4, 3]"});
}
