// Recurrent (CPU) against the float64 reference on one small case per rule; the full grid is in rules/.
#include <doctest/doctest.h>

#include "support/rules.hpp"
#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

TEST_CASE_TEMPLATE("recurrent matches the float64 reference", Rule, LINEA_ALL_RULES) {
  auto c = random_case<Rule, float>::make({.B = 2, .T = 65, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = true});
  auto ref = c.template cast<double>();
  recurrent<Rule>(c.args());
  reference::recurrent<Rule>(ref.args());
  CHECK(relative_error(c.o, ref.o) <= tolerance_for<float>());
  CHECK(relative_error(c.ht, ref.ht) <= tolerance_for<float>());
  CHECK(relative_error(c.residual, ref.residual) <= tolerance_for<float>());
}
