// linea/rules/gdn2.hpp — S_t = S' + k_t (w_t ⊙ v_t − S'ᵀ (b_t ⊙ k_t))ᵀ,  S' = Diag(exp(gk_t)) S_{t-1}
// fla op: `gdn2`. Derivation of the chunkwise form: docs/math/gdn2.md.
#pragma once
#include "write_rule.hpp"

namespace linea {
using gdn2 = write_rule<decay::per_key, update::delta2>;
template <>
struct rule_name<gdn2> {
  static constexpr const char* value = "gdn2";
};
}  // namespace linea
