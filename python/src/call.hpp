// python/src/call.hpp — one call from Python: which rule, form, read and backend, the options, and the arrays
// (inputs and preallocated outputs, by linea's argument names) turned into linea::arguments / linea::gradients.
#pragma once
#include <optional>
#include <string>

#include <linea/core/arguments.hpp>
#include <linea/core/gradients.hpp>

#include "tensors.hpp"

namespace linea::python {

// The scalar options of linea::arguments, as the Python layer passes them.
struct options {
  std::string form = "recurrent";  // recurrent, chunkwise, step
  std::string read = "identity";   // identity, ccq_uniform, ccq_decayed
  std::string backend = "cpu";     // cpu, reference
  std::string dtype = "float32";   // the storage type of every input (the dtype of q)
  std::optional<double> scale;
  bool qk_l2norm = false;
  int beta_act = 0;  // 0 none, 1 sigmoid, 2 two_sigmoid
  bool normalize = false;
  std::optional<float> lower_bound;
  index_t chunk_size = 64;
  int threads = 0;
};

// The arguments of one forward call: arrays by the field names of linea::arguments (ccq fields as "ccq.*",
// in-kernel gate fields as "gate.*"). The views borrow the arrays; the dict keeps them alive for the call.
template <class T, class S = accumulate_t<T>>
arguments<T, S> arguments_of(const nb::dict& x, const options& o) {
  arguments<T, S> a;
  a.q = view_of<const T, 4>(x, "q"), a.k = view_of<const T, 4>(x, "k"), a.v = view_of<const T, 4>(x, "v");
  a.g = view_of<const T, 3>(x, "g"), a.gk = view_of<const T, 4>(x, "gk"), a.beta = view_of<const T, 3>(x, "beta");
  a.b = view_of<const T, 4>(x, "b"), a.w = view_of<const T, 4>(x, "w");
  a.initial_state = view_of<const S, 4>(x, "initial_state");
  a.cu_seqlens = span_of<std::int64_t>(x, "cu_seqlens");
  a.state_indices = span_of<std::int32_t>(x, "state_indices");
  a.gate.A_log = view_of<const float, 1>(x, "gate.A_log");
  a.gate.dt_bias = view_of<const float, 1>(x, "gate.dt_bias");
  a.gate.lower_bound = o.lower_bound;
  auto& c = a.ccq;
  c.lambda = view_of<const T, 3>(x, "ccq.lambda"), c.log_decay = view_of<const T, 3>(x, "ccq.log_decay");
  c.C0 = view_of<const S, 4>(x, "ccq.C0"), c.m0 = view_of<const S, 3>(x, "ccq.m0"), c.z0 = view_of<const S, 2>(x, "ccq.z0");
  c.C = view_of<S, 4>(x, "ccq.C"), c.m = view_of<S, 3>(x, "ccq.m"), c.z = view_of<S, 2>(x, "ccq.z");
  c.q_tilde = view_of<T, 4>(x, "ccq.q_tilde");
  a.o = view_of<T, 4>(x, "o");
  a.final_state = view_of<S, 4>(x, "final_state");
  a.residual = view_of<T, 4>(x, "residual");
  a.scale = o.scale;
  a.qk_l2norm = o.qk_l2norm;
  a.beta_act = static_cast<beta_activation>(o.beta_act);
  a.normalize = o.normalize;
  a.chunk_size = o.chunk_size;
  a.threads = o.threads;
  return a;
}

// The gradient views of one backward call, by the field names of linea::gradients.
template <class T, class S = accumulate_t<T>>
gradients<T, S> gradients_of(const nb::dict& x) {
  gradients<T, S> g;
  g.d_o = view_of<const T, 4>(x, "d_o"), g.d_final_state = view_of<const S, 4>(x, "d_final_state");
  g.dq = view_of<T, 4>(x, "dq"), g.dk = view_of<T, 4>(x, "dk"), g.dv = view_of<T, 4>(x, "dv");
  g.dg = view_of<T, 3>(x, "dg"), g.dgk = view_of<T, 4>(x, "dgk"), g.dbeta = view_of<T, 3>(x, "dbeta");
  g.db = view_of<T, 4>(x, "db"), g.dw = view_of<T, 4>(x, "dw");
  g.d_initial_state = view_of<S, 4>(x, "d_initial_state");
  g.dA_log = view_of<S, 1>(x, "dA_log"), g.ddt_bias = view_of<S, 1>(x, "ddt_bias");
  g.dlambda = view_of<T, 3>(x, "dlambda"), g.dccq_log_decay = view_of<T, 3>(x, "dccq_log_decay");
  g.dC0 = view_of<S, 4>(x, "dC0"), g.dm0 = view_of<S, 3>(x, "dm0"), g.dz0 = view_of<S, 2>(x, "dz0");
  return g;
}

// Entry points, one explicit instantiation per rule (rules/*.cpp): the forward of `o.form` on `o.backend`, and
// the backward (the forward's arrays plus d_o, d_final_state and the gradient outputs in the same dict).
template <class Rule>
void forward(const nb::dict& arrays, const options& o);
template <class Rule>
void backward(const nb::dict& arrays, const options& o);

}  // namespace linea::python
