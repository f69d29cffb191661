// linea/rules/update.hpp — steps 2–3 of every rule: the correction and the write.
//
//   u_t = w_t ⊙ v_t − S'ᵀ (b_t ⊙ k_t),   S_t = S' + k_t u_tᵀ
//
// Every update is this one formula with its own erase gate b (per key channel) and write gate w (per value
// channel): additive b = 0, w = 1; delta b = w = β; delta2 (GDN-2) b and w given. So one kernel serves all.
#pragma once
#include "token.hpp"

namespace linea::update {

// u_t = v_t
struct additive {
  static constexpr bool erases = false, uses_beta = false, uses_channel_gates = false;
  template <class R>
  LINEA_HD static R erase_gate(const token<R>&, index_t) { return R(0); }
  template <class R>
  LINEA_HD static R write_gate(const token<R>&, index_t) { return R(1); }
};

// u_t = β_t (v_t − S'ᵀ k_t)
struct delta {
  static constexpr bool erases = true, uses_beta = true, uses_channel_gates = false;
  template <class R>
  LINEA_HD static R erase_gate(const token<R>& x, index_t) { return x.beta; }
  template <class R>
  LINEA_HD static R write_gate(const token<R>& x, index_t) { return x.beta; }
};

// u_t = w_t ⊙ v_t − S'ᵀ (b_t ⊙ k_t)   (Gated DeltaNet-2: separate erase and write gates)
struct delta2 {
  static constexpr bool erases = true, uses_beta = false, uses_channel_gates = true;
  template <class R>
  LINEA_HD static R erase_gate(const token<R>& x, index_t i) { return x.b[i]; }
  template <class R>
  LINEA_HD static R write_gate(const token<R>& x, index_t j) { return x.w[j]; }
};

}  // namespace linea::update
