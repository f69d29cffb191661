// python/src/module.cpp — the extension module linea._linea: forward(rule, arrays, options) and
// backward(rule, arrays, options) over preallocated arrays, and linea::error as ValueError.
// The Python layer (python/linea/) allocates outputs, speaks fla's signatures and wires autograd.
#include <string>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <linea/rules/list.hpp>

#include "call.hpp"
#include "cuda_entry.hpp"
#include "errors.hpp"
#include "fla_call.hpp"

namespace nb = nanobind;
using namespace linea::python;

namespace {

// Calls entry<Rule>(arrays, o) for the rule named by its fla op name (linear_attn, ..., gdn2).
template <bool Backward>
void run(const std::string& op, const nb::dict& dict, const options& o) {
  const named_arrays arrays(dict);
  const bool known = linea::all_rules::visit(op, [&]<class Rule>() {
    if constexpr (Backward) backward<Rule>(arrays, o);
    else forward<Rule>(arrays, o);
  });
  if (!known) throw nb::value_error(("linea: no rule is named '" + op + "'").c_str());
}

}  // namespace

NB_MODULE(_linea, m) {
  m.doc() = "linea's kernels over preallocated arrays (use the functions of the linea package instead)";
  // The package keeps options objects (python/linea/_core.py) and torch's autograd keeps functions until the
  // interpreter's last collection, after nanobind's leak check: its warnings at exit would be noise.
  nb::set_leak_warnings(false);
  m.attr("_description_tag") = nb::borrow(description_tag());  // (tensors.hpp: the package's torch descriptions)

  nb::class_<options>(m, "options")
      .def(nb::init<>())
      .def_rw("form", &options::form)
      .def_rw("read", &options::read)
      .def_rw("backend", &options::backend)
      .def_rw("dtype", &options::dtype)
      .def_rw("scale", &options::scale)
      .def_rw("qk_l2norm", &options::qk_l2norm)
      .def_rw("beta_act", &options::beta_act)
      .def_rw("normalize", &options::normalize)
      .def_rw("lower_bound", &options::lower_bound)
      .def_rw("chunk_size", &options::chunk_size)
      .def_rw("threads", &options::threads)
      .def_rw("stream", &options::stream)
      .def_rw("repeat", &options::repeat);
  m.attr("has_cuda") = gpu::compiled;

  m.def("forward", &run<false>, nb::arg("op"), nb::arg("arrays"), nb::arg("options"),
        "Runs the forward of rule `op` on the arrays (by linea::arguments' field names), writing the outputs given.");
  m.def("backward", &run<true>, nb::arg("op"), nb::arg("arrays"), nb::arg("options"),
        "Runs the backward of rule `op`: the forward's arrays plus d_o, d_final_state and the gradient outputs.");

  static PyMethodDef fla_forward_def = {
      "fla_forward", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&fla::forward_fastcall)),
      METH_FASTCALL,
      "fla_forward(op, form, q, k, v, g, gk, beta, b, w, scale, initial_state, output_final_state, cu_seqlens, "
      "qk_l2norm, beta_act, normalize, threads, linea_kw)\n\nThe common case of a public call in C++ "
      "(python/src/fla_call.hpp): (o, ht), or None when the Python path must take the call."};
  m.attr("fla_forward") = nb::steal(PyCFunction_NewEx(&fla_forward_def, nullptr, m.attr("__name__").ptr()));

  // Every bad argument is linea::error (a std::runtime_error): a ValueError carrying linea's message (errors.hpp).
  nb::register_exception_translator(translate_linea_error);
}
