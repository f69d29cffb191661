// linea/rules/list.hpp — the one list of linea's named rules. Tests, the conformance runner, the benchmarks and
// the bindings take theirs from here; adding a rule to linea is its header plus one entry in LINEA_RULES.
#pragma once
#include <string_view>
#include <tuple>

#include "additive.hpp"
#include "delta.hpp"
#include "gated_delta.hpp"
#include "gdn2.hpp"
#include "gla.hpp"
#include "kda.hpp"
#include "simple_gla.hpp"

// The named rules as a comma list of types in namespace linea (for doctest's TEST_CASE_TEMPLATE and other
// variadic lists); linea::all_rules is the same list as a type.
#define LINEA_RULES additive, simple_gla, gla, delta, gated_delta, kda, gdn2

namespace linea {

template <class... Rules>
struct rule_list {
  using tuple = std::tuple<Rules...>;
  static constexpr std::size_t size = sizeof...(Rules);

  // f.template operator()<Rule>() for every rule, in order.
  template <class F>
  static void for_each(F&& f) {
    (f.template operator()<Rules>(), ...);
  }
  // f.template operator()<Rule>() for the rule whose fla op name is `op`; false when no rule has that name.
  template <class F>
  static bool visit(std::string_view op, F&& f) {
    return ((op == rule_name<Rules>::value ? (f.template operator()<Rules>(), true) : false) || ...);
  }
  // The same list with more rules after it (a test's own rules).
  template <class... More>
  using with = rule_list<Rules..., More...>;
};

using all_rules = rule_list<LINEA_RULES>;

}  // namespace linea
