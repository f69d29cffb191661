// linea/rules/write_rule.hpp — a write rule is a decay composed with an update (DESIGN.md), and the per-token
// quantities every form builds from their hooks.
#pragma once
#include "../backend/isa.hpp"
#include "concepts.hpp"
#include "decay.hpp"
#include "update.hpp"

namespace linea {

template <decay_policy Decay, update_policy Update>
struct write_rule {
  using decay = Decay;
  using update = Update;
  static constexpr unsigned inputs = Decay::inputs | Update::inputs;  // every per-token gate the rule reads
};

// The rule's name as fla spells the op (conformance runner, messages), specialised in each rule's header.
template <class Rule>
struct rule_name;

// Whether the rule's update erases (needs the UT transform in the chunkwise form).
template <class Rule>
inline constexpr bool erases = Rule::update::kind == update_kind::erase;

// The per-token quantities below are arithmetic, so they sit in the instruction-set namespace (backend/isa.hpp): a
// function template emitted out of line (mean_log_decay's loop over K, at -O1) would otherwise be one symbol shared
// by units built for different instruction sets (tests/backend/isa's isa_shared_symbols).
inline namespace LINEA_ISA {

// b ⊙ k of key lanes [i, i + Lanes::size): the erase key, whose recall S'ᵀ(b ⊙ k) the update subtracts.
template <class Rule, class Lanes = void, class X>
LINEA_HD auto erase_key(const X& x, index_t i) {
  using L = lanes_or_scalar<Lanes, typename X::value_type>;
  return Rule::update::template erase_gate<L>(x, i) * L::at(x.k, i);
}

// w ⊙ v of value lanes [j, j + Lanes::size): the write target before the correction.
template <class Rule, class Lanes = void, class X>
LINEA_HD auto write_target(const X& x, index_t j) {
  using L = lanes_or_scalar<Lanes, typename X::value_type>;
  return Rule::update::template write_gate<L>(x, j) * L::at(x.v, j);
}

// The mean over the K key channels of a token's log decay: the default decay of CCQ's statistics (SPEC §3).
template <class Rule, class X>
LINEA_HD typename X::value_type mean_log_decay(const X& x, index_t K) {
  using Decay = typename Rule::decay;
  using R = typename X::value_type;
  if constexpr (Decay::kind == decay_kind::none) {
    return R(0);
  } else if constexpr (Decay::kind == decay_kind::scalar) {
    return Decay::log_alpha(x, 0);
  } else {
    R s = 0;
    for (index_t i = 0; i < K; ++i) s += Decay::log_alpha(x, i);
    return s / R(K);
  }
}

}  // inline namespace LINEA_ISA

}  // namespace linea
