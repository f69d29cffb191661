// linea/rules/token.hpp — one token's inputs for one value head, already converted to the compute type R.
#pragma once
#include "../config.hpp"

namespace linea {

// What a write rule sees of token t at value head hv. Pointers are rows of length K (q, k, gk, b) or V
// (v, w); a rule reads only the fields it uses. Gates are natural-log decays (α = exp(g)).
template <class R>
struct token {
  const R* q = nullptr;   // query (after in-kernel L2 norm; before scale)
  const R* k = nullptr;   // key   (after in-kernel L2 norm)
  const R* v = nullptr;   // value
  R g = 0;                // scalar log decay
  const R* gk = nullptr;  // per-key log decay
  R beta = 0;             // delta-rule strength (after its activation)
  const R* b = nullptr;   // GDN-2 erase gate
  const R* w = nullptr;   // GDN-2 write gate
};

}  // namespace linea
