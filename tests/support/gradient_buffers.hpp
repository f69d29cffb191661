// tests/support/gradient_buffers.hpp — a host buffer for every gradient of one backward call, and the `gradients`
// views over the ones that call's arguments ask for. Shared by tests/forms/backward_case.hpp (NaN-filled, so that a
// gradient left unwritten fails) and the CUDA fuzz driver (0xFF-filled, so that a rejected call's untouched outputs
// can be checked byte for byte).
#pragma once
#include <array>
#include <type_traits>
#include <utility>

#include <linea/core/gradients.hpp>
#include <linea/tensor.hpp>

namespace linea::testing {

template <class T, class S = accumulate_t<T>>
struct gradient_buffers {
  tensor<T, 4> dq, dk, dv, dgk, db, dw;
  tensor<T, 3> dg, dbeta, dlambda, dccq_log_decay;
  tensor<T, 1> dgamma;
  tensor<S, 4> dh0, dC0;
  tensor<S, 3> dm0;
  tensor<S, 2> dz0;
  tensor<S, 1> dA_log, ddt_bias;

  struct sizes {
    index_t N, B, tokens, H, HV, K, V;  // N: sequences (B, or the cu_seqlens count)
  };

  // Allocates what the call `a` takes a gradient for, each buffer then passed to fill(tensor&), and returns the views:
  // dq, dk, dv and d_initial_state always; dg (through dgamma as a stride-0 view with g_gamma), dgk, dβ, db, dw as `a`
  // has those inputs; dA_log, ddt_bias with in-kernel gates; with the CCQ read dλ, dccq_log_decay (when `a` has c_t),
  // dC0, dm0, dz0.
  template <class A, class DO, class DH, class Fill>
  gradients<T, S> make(const A& a, const DO& d_o, const DH& dht, const sizes& s, bool g_gamma, bool ccq, Fill&& fill) {
    const index_t N = s.N, B = s.B, T_ = s.tokens, H = s.H, HV = s.HV, K = s.K, V = s.V;
    gradients<T, S> g{.d_o = d_o, .d_final_state = dht};
    const auto mk = [&](auto& t, auto... ext) -> auto& {
      t = std::remove_reference_t<decltype(t)>(std::array<index_t, sizeof...(ext)>{ext...});
      fill(t);
      return t;
    };
    g.dq = mk(dq, B, T_, H, K);
    g.dk = mk(dk, B, T_, H, K);
    g.dv = mk(dv, B, T_, HV, V);
    if (g_gamma)
      g.dg = strided<3>(mk(dgamma, HV).data(), {B, T_, HV}, {0, 0, 1});
    else if (!a.g.empty())
      g.dg = mk(dg, B, T_, HV);
    if (!a.gk.empty()) g.dgk = mk(dgk, B, T_, HV, K);
    if (!a.beta.empty()) g.dbeta = mk(dbeta, B, T_, HV);
    if (!a.b.empty()) g.db = mk(db, B, T_, HV, K);
    if (!a.w.empty()) g.dw = mk(dw, B, T_, HV, V);
    g.d_initial_state = mk(dh0, N, HV, K, V);
    if (a.gate.active()) {
      g.dA_log = mk(dA_log, HV);
      g.ddt_bias = mk(ddt_bias, a.gate.dt_bias.extent(0));
    }
    if (ccq) {
      g.dlambda = mk(dlambda, B, T_, HV);
      if (!a.ccq.log_decay.empty()) g.dccq_log_decay = mk(dccq_log_decay, B, T_, HV);
      g.dC0 = mk(dC0, N, HV, K, K);
      g.dm0 = mk(dm0, N, HV, K);
      g.dz0 = mk(dz0, N, HV);
    }
    return g;
  }

  // f(name, mine, other's) for every buffer (other: the same buffers of another type)
  template <class O, class F>
  void for_each(O& o, F&& f) {
    f("dq", dq, o.dq), f("dk", dk, o.dk), f("dv", dv, o.dv), f("dgk", dgk, o.dgk), f("db", db, o.db), f("dw", dw, o.dw);
    f("dg", dg, o.dg), f("dbeta", dbeta, o.dbeta), f("dlambda", dlambda, o.dlambda);
    f("dccq_log_decay", dccq_log_decay, o.dccq_log_decay), f("dg_gamma", dgamma, o.dgamma);
    f("d_initial_state", dh0, o.dh0), f("dC0", dC0, o.dC0), f("dm0", dm0, o.dm0), f("dz0", dz0, o.dz0);
    f("dA_log", dA_log, o.dA_log), f("ddt_bias", ddt_bias, o.ddt_bias);
  }
};

}  // namespace linea::testing
