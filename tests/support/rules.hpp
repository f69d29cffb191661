// tests/support/rules.hpp — the rules the templated tests iterate over, and the host backends of the
// recurrent form. The named rules come from linea's one list (LINEA_RULES, include/linea/rules/list.hpp); the
// tests add one rule of their own that no backend was written for.
#pragma once
#include <tuple>
#include <type_traits>

#include <doctest/doctest.h>

#include <linea/linea.hpp>

namespace linea::testing {

// The proof that the fast paths run the policies, not a list of known rules: Gated DeltaNet's scalar decay
// composed with GDN-2's separate erase and write gates. Defined here only; every test list includes it.
using scalar_delta2 = write_rule<decay::scalar, update::delta2>;

}  // namespace linea::testing

template <>
struct linea::rule_name<linea::testing::scalar_delta2> {
  static constexpr const char* value = "test_scalar_delta2";
};

// Every rule the tests run: linea's named rules and the test-only rule.
#define LINEA_ALL_RULES LINEA_RULES, linea::testing::scalar_delta2

namespace linea::testing {

using tested_rules = all_rules::with<scalar_delta2>;

// The tested rules that read one of the inputs in `Inputs` (rules/policy.hpp), as a std::tuple for
// TEST_CASE_TEMPLATE_APPLY: e.g. rules_reading<input::beta> for the beta activation tests.
template <unsigned Inputs, class List = tested_rules::tuple>
struct rules_reading_impl;
template <unsigned Inputs, class... Rules>
struct rules_reading_impl<Inputs, std::tuple<Rules...>> {
  using type = decltype(std::tuple_cat(
      std::declval<std::conditional_t<reads(Rules::inputs, Inputs), std::tuple<Rules>, std::tuple<>>>()...));
};
template <unsigned Inputs>
using rules_reading = typename rules_reading_impl<Inputs>::type;

// Calls f.template operator()<Backend>() for each backend that runs the recurrent form on the host, each in a
// SUBCASE of its own.
template <class F>
void for_each_backend(F&& f) {
  SUBCASE("cpu") { f.template operator()<backend::cpu>(); }
  SUBCASE("generic") { f.template operator()<backend::generic>(); }
  SUBCASE("reference") { f.template operator()<backend::reference>(); }
}

}  // namespace linea::testing
