// tests/rules/grid.hpp — the recurrent form (CPU) against the float64 reference over a grid of shapes:
// T ∈ {1, 2, 63, 64, 65, 1000}, K ≠ V, HV = 2H, with and without initial state, time-major and head-first
// inputs, packed sequences (including one of length 1). Used by grid_test.cpp (checks) and by the
// error report (prints the maxima per rule).
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/tolerance.hpp"

namespace linea::testing {

struct grid_errors {
  double o = 0, state = 0, residual = 0;
  int cases = 0;
};

inline std::vector<case_shape> grid_shapes() {
  std::vector<case_shape> shapes;
  for (index_t T : {1, 2, 63, 64, 65, 1000})
    for (bool init : {false, true})
      for (bool hf : {false, true})
        shapes.push_back({.B = 2, .T = T, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = init, .head_first = hf});
  // Packed sequences: lengths around the chunk size, one of length 1, one long.
  for (bool init : {false, true}) {
    shapes.push_back({.H = 2, .HV = 4, .K = 32, .V = 16, .seqlens = {1, 63, 64, 65, 2}, .initial_state = init});
    shapes.push_back({.H = 2, .HV = 4, .K = 16, .V = 24, .seqlens = {1000, 1}, .initial_state = init, .head_first = true});
  }
  // V > K and a group of three value heads per key head.
  shapes.push_back({.B = 1, .T = 65, .H = 1, .HV = 3, .K = 16, .V = 32, .initial_state = true});
  return shapes;
}

// Runs every grid shape for Rule with input type T, checks each against SPEC §5 and returns the maxima.
template <class Rule, class T, class Backend = backend::cpu>
grid_errors run_grid() {
  grid_errors worst;
  std::uint32_t seed = 100;
  for (const case_shape& shape0 : grid_shapes()) {
    case_shape shape = shape0;
    shape.seed = seed++;
    auto c = random_case<Rule, T>::make(shape);
    auto ref = c.template cast<double>();
    recurrent<Rule, read::identity, Backend>(c.args());
    reference::recurrent<Rule>(ref.args());

    const double tol = tolerance_for<T>(c.shape.T);
    const double eo = relative_error(c.o, ref.o), es = relative_error(c.ht, ref.ht);
    const double er = relative_error(c.residual, ref.residual);
    INFO(std::string(rule_name<Rule>::value), " ", describe_shape(c.shape));
    CHECK(eo <= tol);
    CHECK(es <= tol);
    CHECK(er <= tol);
    CHECK(all_finite(c.o));
    worst.o = std::max(worst.o, eo), worst.state = std::max(worst.state, es);
    worst.residual = std::max(worst.residual, er);
    ++worst.cases;
  }
  return worst;
}

}  // namespace linea::testing
