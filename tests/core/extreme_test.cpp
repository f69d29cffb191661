// Extreme inputs of SPEC §5: log decays down to −20 per step (uniform in [−20, 0], and exactly −20 at every
// step), β up to 2 (negative eigenvalues; GDN-2's erase gate b up to 2). Outputs must be finite and still
// within the tolerance of the float64 reference, for every rule, float and double, on cpu and generic.
#include <algorithm>

#include <doctest/doctest.h>

#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/rules.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

template <class Rule, class T, class Backend>
void check_extreme(bool constant_minus_20) {
  for (bool packed : {false, true}) {
    case_shape s{.B = 2, .T = 300, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = true,
                 .gates = gate_range::extreme, .beta_max = 2, .seed = 31};
    if (packed) s.seqlens = {1, 150, 149};
    auto c = random_case<Rule, T>::make(s);
    if (constant_minus_20) {
      for (auto& x : c.g.values()) x = T(-20);
      for (auto& x : c.gk.values()) x = T(-20);
    }
    auto ref = c.template cast<double>();
    recurrent<Rule, read::identity, Backend>(c.args());
    reference::recurrent<Rule>(ref.args());
    INFO(std::string(rule_name<Rule>::value), std::string(packed ? " packed" : ""),
         std::string(constant_minus_20 ? " g = -20" : " g in [-20, 0]"));
    CHECK(all_finite(c.o));
    CHECK(all_finite(c.ht));
    CHECK(all_finite(c.residual));
    const double tol = tolerance_for<T>(c.shape.T);
    CHECK(relative_error(c.o, ref.o) <= tol);
    CHECK(relative_error(c.ht, ref.ht) <= tol);
    CHECK(relative_error(c.residual, ref.residual) <= tol);
  }
}

}  // namespace

TEST_CASE_TEMPLATE("extreme gates (log decay down to -20) and beta = 2: finite and within tolerance", Rule,
                   LINEA_ALL_RULES) {
  for (bool constant : {false, true}) {
    check_extreme<Rule, float, backend::cpu>(constant);
    check_extreme<Rule, float, backend::generic>(constant);
    check_extreme<Rule, double, backend::cpu>(constant);
    check_extreme<Rule, double, backend::generic>(constant);
  }
}

TEST_CASE_TEMPLATE("beta = 2 exactly with unit keys: the delta write reflects, and stays finite over a long run",
                   Rule, delta, gated_delta, kda) {
  // With β = 2 and ‖k‖ = 1 the update S ← (I − 2kkᵀ)S' is a reflection: the state norm never grows.
  auto c = random_case<Rule, float>::make({.B = 1, .T = 2000, .H = 1, .HV = 2, .K = 16, .V = 16,
                                           .initial_state = true, .seed = 8});
  std::fill(c.beta.values().begin(), c.beta.values().end(), 2.0f);
  std::fill(c.v.values().begin(), c.v.values().end(), 0.0f);  // pure erasing: S_t = (I − 2kkᵀ) S'
  auto ref = c.template cast<double>();
  recurrent<Rule>(c.args());
  reference::recurrent<Rule>(ref.args());
  CHECK(all_finite(c.o));
  CHECK(all_finite(c.ht));
  CHECK(relative_error(c.ht, ref.ht) <= tolerance_for<float>(2000));
  CHECK(relative_error(c.o, ref.o) <= tolerance_for<float>(2000));
}
