// linea/rules/delta.hpp — S_t = S_{t-1} + k_t β_t (v_t − S_{t-1}ᵀ k_t)ᵀ
// fla op: `delta_rule`. Derivation of the chunkwise form: docs/math/delta.md.
#pragma once
#include "write_rule.hpp"

namespace linea {
using delta = write_rule<decay::none, update::delta>;
template <>
struct rule_name<delta> {
  static constexpr const char* value = "delta_rule";
};
}  // namespace linea
