// linea/rules/kda.hpp — S_t = S' + k_t β_t (v_t − S'ᵀ k_t)ᵀ,  S' = Diag(exp(gk_t)) S_{t-1}
// fla op: `kda`. Derivation of the chunkwise form: docs/math/kda.md.
#pragma once
#include "write_rule.hpp"

namespace linea {
using kda = write_rule<decay::per_key, update::delta>;
template <>
struct rule_name<kda> {
  static constexpr const char* value = "kda";
};
}  // namespace linea
