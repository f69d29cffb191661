// linea/core/load.hpp — the one token loader: one token's inputs at one value head, in the compute type R, with
// every in-kernel option applied (L2 norm of q and k, gates from logits, β's activation). It loads exactly the
// inputs the rule's policies name (rules/policy.hpp). The reference, the generic loops, the SIMD kernel and the
// chunkwise form all load through it; the CUDA kernels apply the same element functions (core/gates.hpp) to what
// they stage in registers and shared memory (backend/cuda/source.hpp).
#pragma once
#include <type_traits>
#include <vector>

#include "../rules/token.hpp"
#include "../rules/write_rule.hpp"
#include "../backend/isa.hpp"
#include "arguments.hpp"
#include "gates.hpp"

namespace linea::inline LINEA_ISA {

template <class Rule, class R>
class token_loader {
 public:
  // Rows hold at least Kp (key rows) and Vp (value rows) entries; entries past K and V stay zero, so a vector
  // loop may run over the padded length. A row that already is a contiguous row of R of the padded length, and
  // that no option modifies, is not copied: the token points into the caller's tensor.
  explicit token_loader(const problem& p, index_t Kp = 0, index_t Vp = 0)
      : Kp_(Kp > p.K ? Kp : p.K), Vp_(Vp > p.V ? Vp : p.V),
        q_(Kp_), k_(Kp_), v_(Vp_), gk_(Kp_), b_(Kp_), w_(Vp_) {}

  // Token t of batch row bt at value head hv (key head hv / G). Query = false: x.q is left null, for a caller that
  // only advances states (the CPU backward's checkpoint pass), which then neither copies nor L2-normalises q.
  template <bool Query = true, class T, class S>
  LINEA_INLINE token<R> load(const arguments<T, S>& a, const problem& p, index_t bt, index_t t, index_t hv) {
    const index_t h = hv / p.group;
    const bool l2 = a.qk_l2norm, gate = a.gate.active();
    token<R> x;
    if constexpr (Query) x.q = row(a.q, bt, t, h, q_, Kp_, l2);
    x.k = row(a.k, bt, t, h, k_, Kp_, l2);
    if (l2) {
      if constexpr (Query) l2_normalize(q_.data(), p.K);
      l2_normalize(k_.data(), p.K);
    }
    x.v = row(a.v, bt, t, hv, v_, Vp_, false);
    const bool bound = a.gate.lower_bound.has_value();
    const R lb = bound ? R(*a.gate.lower_bound) : R(0);
    if constexpr (reads(Rule::inputs, input::g)) {
      x.g = load_as<R>(a.g(bt, t, hv));
      if (gate) x.g = gate_from_logit(x.g, a.gate.A_log, a.gate.dt_bias, bound, lb, hv, hv);
    }
    if constexpr (reads(Rule::inputs, input::gk)) {
      x.gk = row(a.gk, bt, t, hv, gk_, Kp_, gate);
      if (gate)
        for (index_t i = 0; i < p.K; ++i)
          gk_[i] = gate_from_logit(gk_[i], a.gate.A_log, a.gate.dt_bias, bound, lb, hv, hv * p.K + i);
    }
    if constexpr (reads(Rule::inputs, input::beta)) x.beta = activate_beta(load_as<R>(a.beta(bt, t, hv)), a.beta_act);
    if constexpr (reads(Rule::inputs, input::b)) x.b = row(a.b, bt, t, hv, b_, Kp_, false);
    if constexpr (reads(Rule::inputs, input::w)) x.w = row(a.w, bt, t, hv, w_, Vp_, false);
    return x;
  }

 private:
  // Row (bt, t, h) of x as R: the caller's row itself when it can be (see the constructor), else a converted
  // copy in `buf` (which `modified` rows always get, so that the option can work in place).
  template <class U>
  LINEA_INLINE static const R* row(const view<const U, 4>& x, index_t bt, index_t t, index_t h, std::vector<R>& buf,
                      index_t padded, bool modified) {
    const index_t n = x.extent(3), s = x.stride(3);
    const U* src = x.row(bt, t, h);
    if constexpr (std::is_same_v<U, R>) {
      if (!modified && s == 1 && n == padded) return src;
    }
    R* dst = buf.data();
    for (index_t i = 0; i < n; ++i) dst[i] = load_as<R>(src[i * s]);
    return dst;
  }

  index_t Kp_, Vp_;
  std::vector<R> q_, k_, v_, gk_, b_, w_;
};

}  // namespace linea
