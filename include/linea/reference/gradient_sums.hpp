// linea/reference/gradient_sums.hpp — the reference backward's float64 accumulators, one per gradient output.
//
// Gradients are summed in float64 in logical order (several value heads add into one key head's dq, dk; every
// token adds into dA_log, dt_bias) and stored into the caller's views once at the end; a view with stride 0 (dg
// of g_gamma) receives the sum of what it covers.
#pragma once
#include "../backend/isa.hpp"
#include "../core/arguments.hpp"
#include "../core/gradients.hpp"
#include "../core/sum_tensor.hpp"
#include "../core/summed_store.hpp"

namespace linea::reference::inline LINEA_ISA {

template <class Real>
struct gradient_sums {
  linea::detail::sum_tensor<Real, 4> dq, dk, dv, dgk, db, dw, dh0, dC0;
  linea::detail::sum_tensor<Real, 3> dg, dbeta, dlambda, dccq_log_decay, dm0;
  linea::detail::sum_tensor<Real, 2> dz0;
  linea::detail::sum_tensor<Real, 1> dA_log, ddt_bias;

  explicit gradient_sums(const problem& p, index_t dt_bias_size)
      : dq({p.B, p.T, p.H, p.K}), dk({p.B, p.T, p.H, p.K}), dv({p.B, p.T, p.HV, p.V}), dgk({p.B, p.T, p.HV, p.K}),
        db({p.B, p.T, p.HV, p.K}), dw({p.B, p.T, p.HV, p.V}), dh0({p.N, p.HV, p.K, p.V}), dC0({p.N, p.HV, p.K, p.K}),
        dg({p.B, p.T, p.HV}), dbeta({p.B, p.T, p.HV}), dlambda({p.B, p.T, p.HV}), dccq_log_decay({p.B, p.T, p.HV}),
        dm0({p.N, p.HV, p.K}), dz0({p.N, p.HV}), dA_log({p.HV}), ddt_bias({dt_bias_size}) {}

  // Every given output view of g from these sums.
  template <class T, class S>
  void store(const gradients<T, S>& g) const {
    put(dq, g.dq), put(dk, g.dk), put(dv, g.dv), put(dg, g.dg), put(dgk, g.dgk), put(dbeta, g.dbeta);
    put(db, g.db), put(dw, g.dw), put(dh0, g.d_initial_state), put(dA_log, g.dA_log), put(ddt_bias, g.ddt_bias);
    put(dlambda, g.dlambda), put(dccq_log_decay, g.dccq_log_decay), put(dC0, g.dC0), put(dm0, g.dm0);
    put(dz0, g.dz0);
  }

 private:
  template <class X, int Rank>
  static void put(const linea::detail::sum_tensor<Real, Rank>& sum, const view<X, Rank>& out) {
    detail::store_summed(sum, out);
  }
};

}  // namespace linea::reference
