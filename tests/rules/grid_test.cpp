// Recurrent form (backend::cpu) against the float64 reference, every rule, float and double inputs, over the
// grid of tests/rules/grid.hpp. The maxima are printed by the skipped "report" test:
//   build-*/tests/linea_tests --no-skip --test-suite=report
#include <cstdio>

#include "rules/grid.hpp"
#include "support/rules.hpp"

using namespace linea;
using namespace linea::testing;

TEST_CASE_TEMPLATE("recurrent (cpu, float32 inputs) matches the float64 reference over the grid", Rule,
                   LINEA_ALL_RULES) {
  const grid_errors e = run_grid<Rule, float>();
  CHECK(e.cases == static_cast<int>(grid_shapes().size()));
}

TEST_CASE_TEMPLATE("recurrent (cpu, float64 inputs) matches the float64 reference over the grid", Rule,
                   LINEA_ALL_RULES) {
  const grid_errors e = run_grid<Rule, double>();
  CHECK(e.cases == static_cast<int>(grid_shapes().size()));
}

TEST_CASE_TEMPLATE("recurrent (generic loops, float32 and float64) matches the float64 reference over the grid", Rule,
                   LINEA_ALL_RULES) {
  run_grid<Rule, float, backend::generic>();
  run_grid<Rule, double, backend::generic>();
}

namespace {
template <class... Rules>
void print_report() {
  std::printf("relative error ||x - ref|| / ||ref|| vs the float64 reference, max over %zu grid cases\n",
              grid_shapes().size());
  std::printf("%-18s %-8s %12s %12s %12s\n", "rule", "input", "o", "final state", "residual");
  auto row = [](const char* name, const char* type, const grid_errors& e) {
    std::printf("%-18s %-8s %12.3e %12.3e %12.3e\n", name, type, e.o, e.state, e.residual);
  };
  std::printf("backend::cpu (default)\n");
  (row(rule_name<Rules>::value, "float32", run_grid<Rules, float>()), ...);
  (row(rule_name<Rules>::value, "float64", run_grid<Rules, double>()), ...);
  std::printf("backend::generic\n");
  (row(rule_name<Rules>::value, "float32", run_grid<Rules, float, backend::generic>()), ...);
  (row(rule_name<Rules>::value, "float64", run_grid<Rules, double, backend::generic>()), ...);
}
}  // namespace

TEST_CASE("report: relative errors per rule over the grid" * doctest::test_suite("report") * doctest::skip()) {
  print_report<LINEA_ALL_RULES>();
}
