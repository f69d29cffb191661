// linea/backend/cpu/backward_sums.hpp — the CPU backward's gradients that are sums over more than one work item,
// or whose view may cover a position more than once, kept in float64 and stored once after all items.
//
//   per token, [B, T, HV]   dg, dβ, dλ, d ccq.log_decay   (dg of g_gamma has stride 0: the view receives the sum)
//   per sequence, [N, HV…]   dC0, dm0, dz0                  (CCQ's initial statistics, via reference::read_tape::end)
//   per parameter            dA_log [HV], ddt_bias         (summed over every token: kept per sequence, then
//                                                           added in sequence order, so the result does not
//                                                           depend on which thread ran which item)
// Work items write disjoint entries; store() then writes each given view once.
#pragma once
#include <array>

#include "../isa.hpp"
#include "../../core/arguments.hpp"
#include "../../core/gradients.hpp"
#include "../../core/sum_tensor.hpp"
#include "../../core/summed_store.hpp"

namespace linea::cpu_backend::inline LINEA_ISA {

struct backward_sums {
  template <int Rank>
  using sums = detail::sum_tensor<double, Rank>;

  sums<3> dg, dbeta, dlambda, dccq_log_decay;
  sums<4> dC0;
  sums<3> dm0;
  sums<2> dz0;
  sums<2> dA_log, ddt_bias;  // [N, HV], [N, dt_bias size]: one row per sequence

  // Only what the call reads: a sum nobody asked for costs nothing.
  template <class T, class S>
  backward_sums(const arguments<T, S>& a, const gradients<T, S>& g, const problem& p, bool ccq_read) {
    const std::array<index_t, 3> per_token{p.B, p.T, p.HV};
    if (!g.dg.empty()) dg = sums<3>(per_token);
    if (!g.dbeta.empty()) dbeta = sums<3>(per_token);
    if (ccq_read) {  // the read's tape adds into these whether or not they are asked for
      dlambda = sums<3>(per_token);
      if (!a.ccq.log_decay.empty()) dccq_log_decay = sums<3>(per_token);
      dC0 = sums<4>({p.N, p.HV, p.K, p.K});
      dm0 = sums<3>({p.N, p.HV, p.K});
      dz0 = sums<2>({p.N, p.HV});
    }
    if (a.gate.active()) {
      dA_log = sums<2>({p.N, p.HV});
      ddt_bias = sums<2>({p.N, a.gate.dt_bias.empty() ? 0 : a.gate.dt_bias.extent(0)});
    }
  }

  template <class T, class S>
  void store(const gradients<T, S>& g) const {
    put(dg, g.dg), put(dbeta, g.dbeta), put(dlambda, g.dlambda), put(dccq_log_decay, g.dccq_log_decay);
    put(dC0, g.dC0), put(dm0, g.dm0), put(dz0, g.dz0);
    put_rows(dA_log, g.dA_log), put_rows(ddt_bias, g.ddt_bias);
  }

 private:
  template <class X, int Rank>
  static void put(const sums<Rank>& sum, const view<X, Rank>& out) {
    detail::store_summed(sum, out);
  }

  // out[j] = Σ_n rows(n, j), in sequence order.
  template <class X>
  static void put_rows(const sums<2>& rows, const view<X, 1>& out) {
    if (out.empty()) return;
    for (index_t j = 0; j < out.extent(0); ++j) {
      double s = 0;
      for (index_t n = 0; n < rows.extent(0); ++n) s += rows(n, j);
      out(j) = static_cast<X>(s);
    }
  }
};

}  // namespace linea::cpu_backend
