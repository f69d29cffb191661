// linea/reference/gradient_sums.hpp — the reference backward's float64 accumulators, one per gradient output.
//
// Gradients are summed in float64 in logical order (several value heads add into one key head's dq, dk; every
// token adds into dA_log, dt_bias) and stored into the caller's views once at the end; a view with stride 0 (dg
// of g_gamma) receives the sum of what it covers.
#pragma once
#include <algorithm>
#include <map>

#include "../backend/isa.hpp"
#include "../core/arguments.hpp"
#include "../core/gradients.hpp"
#include "../tensor.hpp"

namespace linea::reference::inline LINEA_ISA {

template <class Real>
struct gradient_sums {
  tensor<Real, 4> dq, dk, dv, dgk, db, dw, dh0, dC0;
  tensor<Real, 3> dg, dbeta, dlambda, dccq_log_decay, dm0;
  tensor<Real, 2> dz0;
  tensor<Real, 1> dA_log, ddt_bias;

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
  // Every position of `out` from the sum at its logical index. A view with a zero stride (dg of g_gamma) covers one
  // element from several positions: it receives their sum, added in Real in logical order (16-bit types have no
  // arithmetic of their own, and a running 16-bit sum would round at every step) and stored once.
  template <class X, int Rank>
  static void put(const tensor<Real, Rank>& sum, const view<X, Rank>& out) {
    if (out.empty()) return;
    bool broadcast = false;
    for (int r = 0; r < Rank; ++r) broadcast = broadcast || (out.stride(r) == 0 && out.extent(r) > 1);
    if (!broadcast) {
      for_each_index(out, [&](const auto&... i) { out(i...) = static_cast<X>(sum(i...)); });
      return;
    }
    std::map<X*, Real> total;  // by address: the positions that share an element
    for_each_index(out, [&](const auto&... i) { total[&out(i...)] += sum(i...); });
    for (const auto& [element, value] : total) *element = static_cast<X>(value);
  }

  template <class X, int Rank, class F>
  static void for_each_index(const view<X, Rank>& v, F&& f) {
    if constexpr (Rank == 1) {
      for (index_t a = 0; a < v.extent(0); ++a) f(a);
    } else if constexpr (Rank == 2) {
      for (index_t a = 0; a < v.extent(0); ++a)
        for (index_t b = 0; b < v.extent(1); ++b) f(a, b);
    } else if constexpr (Rank == 3) {
      for (index_t a = 0; a < v.extent(0); ++a)
        for (index_t b = 0; b < v.extent(1); ++b)
          for (index_t c = 0; c < v.extent(2); ++c) f(a, b, c);
    } else {
      static_assert(Rank == 4, "gradient views have rank 1 to 4");
      for (index_t a = 0; a < v.extent(0); ++a)
        for (index_t b = 0; b < v.extent(1); ++b)
          for (index_t c = 0; c < v.extent(2); ++c)
            for (index_t d = 0; d < v.extent(3); ++d) f(a, b, c, d);
    }
  }
};

}  // namespace linea::reference
