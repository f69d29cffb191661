// linea/rules/write_rule.hpp — a write rule is a decay composed with an update (DESIGN.md).
#pragma once
#include "decay.hpp"
#include "update.hpp"

namespace linea {

template <class Decay, class Update>
struct write_rule {
  using decay = Decay;
  using update = Update;
};

// The rule's name as fla spells the op (used by the conformance runner and in messages).
template <class Rule>
struct rule_name;

}  // namespace linea
