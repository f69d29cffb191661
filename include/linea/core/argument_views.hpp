// linea/core/argument_views.hpp — every view of a call's arguments, by role, with the name errors give it: the one
// list that the checks over all arguments walk (validate.hpp: data pointers, aliasing; gradients.hpp: the
// gradients' aliasing, a caller's scratch), so that a view added to `arguments` or `gradients` is added here once.
//
//   for_each_input(a, f)        f(view, name)               what the forward reads
//   for_each_index_span(a, f)   f(span, name)               cu_seqlens (as bytes), state_indices: host spans
//   for_each_output(a, f)       f(view, name, in_place_of)  what the forward writes, and the input it may be
//                                                          exactly in place over ("" for none)
//   for_each_upstream(g, f)     f(view, name)               what the backward reads besides the forward's inputs
//   for_each_gradient(g, f)     f(view, name, input)        what the backward writes, and the input it is the
//                                                          gradient of (the one it may be exactly in place over)
#pragma once
#include "arguments.hpp"

namespace linea {

template <class T, class S>
struct gradients;

namespace detail {

template <class T, class S, class F>
void for_each_input(const arguments<T, S>& a, F&& f) {
  const auto& c = a.ccq;
  f(a.q, "q"), f(a.k, "k"), f(a.v, "v"), f(a.g, "g"), f(a.gk, "gk"), f(a.beta, "beta"), f(a.b, "b"), f(a.w, "w");
  f(a.initial_state, "initial_state"), f(a.gate.A_log, "gate.A_log"), f(a.gate.dt_bias, "gate.dt_bias");
  f(c.lambda, "ccq.lambda"), f(c.log_decay, "ccq.log_decay"), f(c.C0, "ccq.C0"), f(c.m0, "ccq.m0");
  f(c.z0, "ccq.z0");
}

template <class T, class S, class F>
void for_each_index_span(const arguments<T, S>& a, F&& f) {
  f(a.cu_seqlens.bytes(), "cu_seqlens"), f(a.state_indices, "state_indices");
}

template <class T, class S, class F>
void for_each_output(const arguments<T, S>& a, F&& f) {
  const auto& c = a.ccq;
  f(a.o, "o", "v"), f(a.final_state, "final_state", "initial_state"), f(a.residual, "residual", "");
  f(a.checkpoints, "checkpoints", ""), f(c.C, "ccq.C", "ccq.C0"), f(c.m, "ccq.m", "ccq.m0");
  f(c.z, "ccq.z", "ccq.z0"), f(c.q_tilde, "ccq.q_tilde", "");
}

template <class T, class S, class F>
void for_each_upstream(const gradients<T, S>& g, F&& f) {
  f(g.d_o, "d_o"), f(g.d_final_state, "d_final_state");
}

template <class T, class S, class F>
void for_each_gradient(const gradients<T, S>& g, F&& f) {
  f(g.dq, "dq", "q"), f(g.dk, "dk", "k"), f(g.dv, "dv", "v"), f(g.dg, "dg", "g"), f(g.dgk, "dgk", "gk");
  f(g.dbeta, "dbeta", "beta"), f(g.db, "db", "b"), f(g.dw, "dw", "w");
  f(g.d_initial_state, "d_initial_state", "initial_state"), f(g.dA_log, "dA_log", "gate.A_log");
  f(g.ddt_bias, "ddt_bias", "gate.dt_bias"), f(g.dlambda, "dlambda", "ccq.lambda");
  f(g.dccq_log_decay, "dccq_log_decay", "ccq.log_decay"), f(g.dC0, "dC0", "ccq.C0"), f(g.dm0, "dm0", "ccq.m0");
  f(g.dz0, "dz0", "ccq.z0");
}

// Each unordered pair of a visitor's views once: f(x, x_name, y, y_name) for x before y in its order.
template <class Visit, class F>
void for_each_pair(Visit&& visit, F&& f) {
  int i = 0;
  visit([&](const auto& x, const char* x_name, auto&&...) {
    int j = 0;
    visit([&](const auto& y, const char* y_name, auto&&...) {
      if (j++ > i) f(x, x_name, y, y_name);
    });
    ++i;
  });
}

}  // namespace detail
}  // namespace linea
