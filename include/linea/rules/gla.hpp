// linea/rules/gla.hpp — S_t = Diag(exp(gk_t)) S_{t-1} + k_t v_tᵀ
// fla op: `gla`. Derivation of the chunkwise form: docs/math/gla.md.
#pragma once
#include "write_rule.hpp"

namespace linea {
using gla = write_rule<decay::per_key, update::additive>;
template <>
struct rule_name<gla> {
  static constexpr const char* value = "gla";
};
}  // namespace linea
