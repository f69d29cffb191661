// The float64 softmax read (reference/softmax.hpp), on hand-derived values.
#include <doctest/doctest.h>

#include <cmath>

#include <linea/reference/softmax.hpp>

using namespace linea;

// Keys e1, e2, query (1, 0), scale ln 3: logits (ln 3, 0) → p = (3/4, 1/4) → o_2 = ¾ v1 + ¼ v2; o_1 = v1.
TEST_CASE("softmax reference: hand-derived weights and causality") {
  const double q[4] = {1, 0, 1, 0}, k[4] = {1, 0, 0, 1}, v[4] = {2, -4, 6, 8};
  double o[4] = {};
  arguments<double> a;
  a.q = contiguous<4>(q, {1, 2, 1, 2}), a.k = contiguous<4>(k, {1, 2, 1, 2}), a.v = contiguous<4>(v, {1, 2, 1, 2});
  a.o = contiguous<4>(o, {1, 2, 1, 2});
  a.scale = std::log(3.0);
  reference::softmax_attention(a);
  CHECK(o[0] == doctest::Approx(2).epsilon(1e-15));
  CHECK(o[1] == doctest::Approx(-4).epsilon(1e-15));
  CHECK(o[2] == doctest::Approx(0.75 * 2 + 0.25 * 6).epsilon(1e-15));
  CHECK(o[3] == doctest::Approx(0.75 * -4 + 0.25 * 8).epsilon(1e-15));

  // Large logits do not overflow: scale 1000 puts all weight on the best key.
  a.scale = 1000.0;
  reference::softmax_attention(a);
  CHECK(o[2] == doctest::Approx(2).epsilon(1e-15));
  CHECK(std::isfinite(o[3]));
}
