// linea/rules/simple_gla.hpp — S_t = exp(g_t) S_{t-1} + k_t v_tᵀ
// fla op: `simple_gla`. Derivation of the chunkwise form: docs/math/simple_gla.md.
#pragma once
#include "write_rule.hpp"

namespace linea {
using simple_gla = write_rule<decay::scalar, update::additive>;
template <>
struct rule_name<simple_gla> {
  static constexpr const char* value = "simple_gla";
};
}  // namespace linea
