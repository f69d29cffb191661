// tests/support/rules.hpp — the rule lists the templated tests iterate over, and the host backends of the
// recurrent form: one place to add a rule or a backend.
#pragma once
#include <doctest/doctest.h>

#include <linea/linea.hpp>

#define LINEA_ALL_RULES additive, simple_gla, gla, delta, gated_delta, kda, gdn2
#define LINEA_DECAY_RULES simple_gla, gla, gated_delta, kda, gdn2
#define LINEA_BETA_RULES delta, gated_delta, kda

namespace linea::testing {

// Calls f.template operator()<Backend>() for each backend that runs the recurrent form on the host, each in a
// SUBCASE of its own.
template <class F>
void for_each_backend(F&& f) {
  SUBCASE("cpu") { f.template operator()<backend::cpu>(); }
  SUBCASE("generic") { f.template operator()<backend::generic>(); }
  SUBCASE("reference") { f.template operator()<backend::reference>(); }
}

}  // namespace linea::testing
