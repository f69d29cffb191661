// linea/rules/decay.hpp — step 1 of every rule: S' = Diag(α_t) S_{t-1}, α_t = exp(log_decay).
//
// A decay policy says which gate it reads and gives the log decay of key channel i (SPEC §2).
#pragma once
#include "token.hpp"

namespace linea::decay {

// S' = S_{t-1}: no gate.
struct none {
  static constexpr bool scalar_gate = false, key_gate = false;
  template <class R>
  LINEA_HD static R log_alpha(const token<R>&, index_t) { return R(0); }
};

// S' = exp(g_t) S_{t-1}: one gate per token and value head (simple_gla, Mamba2, Gated DeltaNet).
struct scalar {
  static constexpr bool scalar_gate = true, key_gate = false;
  template <class R>
  LINEA_HD static R log_alpha(const token<R>& x, index_t) { return x.g; }
};

// S' = Diag(exp(gk_t)) S_{t-1}: one gate per key channel (GLA, KDA, GDN-2).
struct per_key {
  static constexpr bool scalar_gate = false, key_gate = true;
  template <class R>
  LINEA_HD static R log_alpha(const token<R>& x, index_t i) { return x.gk[i]; }
};

}  // namespace linea::decay
