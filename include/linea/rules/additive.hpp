// linea/rules/additive.hpp — S_t = S_{t-1} + k_t v_tᵀ
// fla op: `linear_attn`. Derivation of the chunkwise form: docs/math/additive.md.
#pragma once
#include "write_rule.hpp"

namespace linea {
using additive = write_rule<decay::none, update::additive>;
template <>
struct rule_name<additive> {
  static constexpr const char* value = "linear_attn";
};
}  // namespace linea
