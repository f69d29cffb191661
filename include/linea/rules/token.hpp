// linea/rules/token.hpp — one token's inputs for one value head, already converted to the compute type R.
#pragma once
#include "../config.hpp"

namespace linea {

// What a write rule's hooks see of token t at value head hv. Row fields have length K (q, k, gk, b) or V
// (v, w); a rule reads only the inputs its policies name (rules/policy.hpp). Gates are natural-log decays
// (α = exp(g)). Row is the type of a row: a pointer on the host, a pointer into shared memory or a
// lane_value on a GPU.
template <class R, class Row = const R*>
struct token {
  using value_type = R;
  Row q{};     // query (after in-kernel L2 norm; before scale)
  Row k{};     // key   (after in-kernel L2 norm)
  Row v{};     // value
  R g = 0;     // scalar log decay (after the in-kernel gate)
  Row gk{};    // per-key log decay (after the in-kernel gate)
  R beta = 0;  // delta-rule strength (after its activation)
  Row b{};     // GDN-2 erase gate
  Row w{};     // GDN-2 write gate
};

}  // namespace linea
