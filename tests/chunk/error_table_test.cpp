// Prints the chunkwise form's measured errors per rule and chunk size:
//   linea_tests -tc="chunkwise error table"
// Max over a grid of T ∈ {1, 17, 64, 65, 1000, 4096} (two batch rows, GVA, initial state) plus packed sequences,
// K = V = 64, normal gates; and extreme gates (log decays in [−20, 0], β up to 2) at T = 1000.
// It also checks every maximum against SPEC §5, so the table cannot print a failing number silently.
#include <cstdio>

#include <doctest/doctest.h>

#include "chunk/compare_forms.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

struct table_row {
  double f32 = 0, f64 = 0, f32_extreme = 0, f64_extreme = 0;
};

template <class Rule>
void print_rule() {
  for (index_t C : {16, 32, 64, 128}) {
    table_row row;
    std::uint32_t seed = 500;
    std::vector<case_shape> shapes;
    for (index_t T : {1, 17, 64, 65, 1000, 4096})
      shapes.push_back({.B = 2, .T = T, .H = 1, .HV = 2, .K = 64, .V = 64, .initial_state = true});
    shapes.push_back({.H = 1, .HV = 2, .K = 64, .V = 64, .seqlens = {1000, C + 1, 1, 2 * C}, .initial_state = true});
    for (auto s : shapes) {
      s.seed = seed++;
      row.f32 = std::max(row.f32, compare_forms<Rule, float>(s, C, false).chunkwise.worst());
      row.f64 = std::max(row.f64, compare_forms<Rule, double>(s, C, false).chunkwise.worst());
    }
    const case_shape x{.B = 2, .T = 1000, .H = 1, .HV = 2, .K = 64, .V = 64, .initial_state = true,
                       .gates = gate_range::extreme, .beta_max = 2, .seed = seed++};
    row.f32_extreme = compare_forms<Rule, float>(x, C, false).chunkwise.worst();
    row.f64_extreme = compare_forms<Rule, double>(x, C, false).chunkwise.worst();
    std::printf("| %-16s | %3ld | %.2e | %.2e | %.2e | %.2e |\n", rule_name<Rule>::value, static_cast<long>(C),
                row.f32, row.f64, row.f32_extreme, row.f64_extreme);
    CHECK(row.f32 <= tolerance_for<float>(4096));
    CHECK(row.f32_extreme <= tolerance_for<float>(1000));
    CHECK(row.f64 <= tolerance_for<double>());
    CHECK(row.f64_extreme <= tolerance_for<double>());
  }
}

}  // namespace

TEST_SUITE("slow") {
  TEST_CASE("chunkwise error table") {
    std::printf("| rule             |   C | f32      | f64      | f32 ext. | f64 ext. |\n");
    print_rule<additive>();
    print_rule<simple_gla>();
    print_rule<gla>();
    print_rule<delta>();
    print_rule<gated_delta>();
    print_rule<kda>();
    print_rule<gdn2>();
  }
}
