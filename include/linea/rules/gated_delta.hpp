// linea/rules/gated_delta.hpp — S_t = S' + k_t β_t (v_t − S'ᵀ k_t)ᵀ,  S' = exp(g_t) S_{t-1}
// fla op: `gated_delta_rule`. Derivation of the chunkwise form: docs/math/gated_delta.md.
#pragma once
#include "write_rule.hpp"

namespace linea {
using gated_delta = write_rule<decay::scalar, update::delta>;
template <>
struct rule_name<gated_delta> {
  static constexpr const char* value = "gated_delta_rule";
};
}  // namespace linea
