// Streaming: T tokens in two calls, the state carried from the first call's final_state into the second
// call's initial_state, equal one call over all T tokens (o, residual and final state), for every rule.
#include <doctest/doctest.h>

#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/rules.hpp"
#include "support/slice.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

template <class Rule, class Backend, class T>
void check_two_calls_equal_one(bool with_initial_state, index_t split) {
  using S = accumulate_t<T>;
  const index_t Tn = 100;
  auto c = random_case<Rule, T>::make(
      {.B = 2, .T = Tn, .H = 2, .HV = 4, .K = 16, .V = 24, .initial_state = with_initial_state, .head_first = true});
  auto whole = c.template cast<T>();  // same inputs, own outputs
  recurrent<Rule, read::identity, Backend>(whole.args());

  tensor<S, 4> carried({c.N, 4, 16, 24});
  auto first = time_slice_args(c.args(), 0, split);
  first.final_state = carried;
  recurrent<Rule, read::identity, Backend>(first);
  auto second = time_slice_args(c.args(), split, Tn);
  second.initial_state = carried;  // final_state (c.ht) is a separate buffer
  recurrent<Rule, read::identity, Backend>(second);

  INFO(std::string(rule_name<Rule>::value), " split at ", split, std::string(with_initial_state ? " with h0" : ""));
  const double tol = tolerance_for<T>(Tn);
  CHECK(relative_error(c.o, whole.o) <= tol);
  CHECK(relative_error(c.residual, whole.residual) <= tol);
  CHECK(relative_error(c.ht, whole.ht) <= tol);
}

}  // namespace

TEST_CASE_TEMPLATE("streaming: two calls with the state carried equal one call (cpu, float32)", Rule,
                   LINEA_ALL_RULES) {
  for (index_t split : {1, 37, 64, 99})
    for (bool h0 : {false, true}) check_two_calls_equal_one<Rule, backend::cpu, float>(h0, split);
}

TEST_CASE_TEMPLATE("streaming: two calls with the state carried equal one call (cpu and reference, float64)", Rule,
                   LINEA_ALL_RULES) {
  check_two_calls_equal_one<Rule, backend::cpu, double>(true, 37);
  check_two_calls_equal_one<Rule, backend::reference, double>(true, 37);
}

TEST_CASE("streaming: an empty first call (T = 0) passes the initial state through") {
  auto c = random_case<kda, float>::make({.B = 2, .T = 20, .H = 1, .HV = 2, .K = 8, .V = 8, .initial_state = true});
  auto whole = c.cast<float>();
  recurrent<kda>(whole.args());
  tensor<float, 4> carried({2, 2, 8, 8}, float(-1));
  auto first = time_slice_args(c.args(), 0, 0);
  first.final_state = carried;
  recurrent<kda>(first);
  CHECK(relative_error(carried, c.h0) == 0.0);
  auto second = c.args();
  second.initial_state = carried;
  recurrent<kda>(second);
  CHECK(relative_error(c.o, whole.o) <= tolerance_for<float>());
  CHECK(relative_error(c.ht, whole.ht) <= tolerance_for<float>());
}
