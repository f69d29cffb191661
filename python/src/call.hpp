// python/src/call.hpp — one call from Python: which rule, form, read and backend, the options, and the arrays
// (inputs and preallocated outputs, by linea's argument names) turned into linea::arguments / linea::gradients.
#pragma once
#include <cstdint>
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
  std::string backend = "cpu";     // cpu, reference, cuda
  std::string dtype = "float32";   // the storage type of every input (the dtype of q)
  std::optional<double> scale;
  bool qk_l2norm = false;
  int beta_act = 0;  // 0 none, 1 sigmoid, 2 two_sigmoid
  bool normalize = false;
  std::optional<float> lower_bound;
  index_t chunk_size = 64;
  int threads = 0;
  std::uintptr_t stream = 0;  // cuda: the cudaStream_t of the call (torch's current stream on q's device)
  int repeat = 1;             // runs of the kernel per call: > 1 only to time the kernel alone (bench/python_overhead.py)
};

// The arguments of one forward call: arrays by the field names of linea::arguments (ccq fields as "ccq.*",
// in-kernel gate fields as "gate.*"). The views borrow the arrays; the dict keeps them alive for the call. `on` is
// the call's device (q's, set by the first view). The index arrays cu_seqlens / state_indices are host spans here;
// a CUDA call given them on the device takes them apart (python/src/dispatch.hpp).
template <class T, class S = accumulate_t<T>>
arguments<T, S> arguments_of(const named_arrays& x, const options& o, device& on, bool host_indices = true) {
  arguments<T, S> a;
  a.q = view_of<const T, 4>(x, field("q"), on), a.k = view_of<const T, 4>(x, field("k"), on);
  a.v = view_of<const T, 4>(x, field("v"), on), a.g = view_of<const T, 3>(x, field("g"), on);
  a.gk = view_of<const T, 4>(x, field("gk"), on), a.beta = view_of<const T, 3>(x, field("beta"), on);
  a.b = view_of<const T, 4>(x, field("b"), on), a.w = view_of<const T, 4>(x, field("w"), on);
  a.initial_state = view_of<const S, 4>(x, field("initial_state"), on);
  if (host_indices) {
    a.cu_seqlens = seqlens_of(x, field("cu_seqlens"), on);
    a.state_indices = span_of<std::int32_t>(x, field("state_indices"), on);
  }
  a.gate.A_log = view_of<const float, 1>(x, field("gate.A_log"), on);
  a.gate.dt_bias = view_of<const float, 1>(x, field("gate.dt_bias"), on);
  a.gate.lower_bound = o.lower_bound;
  auto& c = a.ccq;
  c.lambda = view_of<const T, 3>(x, field("ccq.lambda"), on);
  c.log_decay = view_of<const T, 3>(x, field("ccq.log_decay"), on);
  c.C0 = view_of<const S, 4>(x, field("ccq.C0"), on), c.m0 = view_of<const S, 3>(x, field("ccq.m0"), on);
  c.z0 = view_of<const S, 2>(x, field("ccq.z0"), on);
  c.C = view_of<S, 4>(x, field("ccq.C"), on), c.m = view_of<S, 3>(x, field("ccq.m"), on);
  c.z = view_of<S, 2>(x, field("ccq.z"), on), c.q_tilde = view_of<T, 4>(x, field("ccq.q_tilde"), on);
  a.o = view_of<T, 4>(x, field("o"), on);
  a.final_state = view_of<S, 4>(x, field("final_state"), on);
  a.residual = view_of<T, 4>(x, field("residual"), on);
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
gradients<T, S> gradients_of(const named_arrays& x, device& on) {
  gradients<T, S> g;
  g.d_o = view_of<const T, 4>(x, field("d_o"), on), g.d_final_state = view_of<const S, 4>(x, field("d_final_state"), on);
  g.dq = view_of<T, 4>(x, field("dq"), on), g.dk = view_of<T, 4>(x, field("dk"), on);
  g.dv = view_of<T, 4>(x, field("dv"), on), g.dg = view_of<T, 3>(x, field("dg"), on);
  g.dgk = view_of<T, 4>(x, field("dgk"), on), g.dbeta = view_of<T, 3>(x, field("dbeta"), on);
  g.db = view_of<T, 4>(x, field("db"), on), g.dw = view_of<T, 4>(x, field("dw"), on);
  g.d_initial_state = view_of<S, 4>(x, field("d_initial_state"), on);
  g.dA_log = view_of<S, 1>(x, field("dA_log"), on), g.ddt_bias = view_of<S, 1>(x, field("ddt_bias"), on);
  g.dlambda = view_of<T, 3>(x, field("dlambda"), on);
  g.dccq_log_decay = view_of<T, 3>(x, field("dccq_log_decay"), on);
  g.dC0 = view_of<S, 4>(x, field("dC0"), on), g.dm0 = view_of<S, 3>(x, field("dm0"), on);
  g.dz0 = view_of<S, 2>(x, field("dz0"), on);
  return g;
}

// Entry points, one explicit instantiation per rule (rules/*.cpp): the forward of `o.form` on `o.backend`, and
// the backward (the forward's arrays plus d_o, d_final_state and the gradient outputs in the same dict).
template <class Rule>
void forward(const named_arrays& arrays, const options& o);
template <class Rule>
void backward(const named_arrays& arrays, const options& o);

}  // namespace linea::python
