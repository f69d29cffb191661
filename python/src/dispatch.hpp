// python/src/dispatch.hpp — from the names of one call (dtype, read, form, backend) to the one template that runs
// it. Each rules/<rule>.cpp includes this and instantiates forward<Rule> and backward<Rule> for its rule.
#pragma once
#include <string>
#include <type_traits>

#include <linea/linea.hpp>

#include "call.hpp"

namespace linea::python {

template <class F>
void with_read(const std::string& read, F&& f) {
  if (read == "identity") f.template operator()<read::identity>();
  else if (read == "ccq_uniform") f.template operator()<read::ccq<read::uniform>>();
  else if (read == "ccq_decayed") f.template operator()<read::ccq<read::decayed>>();
  else throw nb::value_error(("linea: read '" + read + "' is unknown; use identity, ccq_uniform or ccq_decayed").c_str());
}

// The one place that names the backward: linea::reference::backward until the public
// linea::backward<Rule, Read, Backend> (forms/backward.hpp) lands; then this line becomes that call.
template <class Rule, class Read, class T, class S>
void run_backward(const arguments<T, S>& a, const gradients<T, S>& g) {
  reference::backward<Rule, Read>(a, g);
}

template <class Rule, class Read, class T>
void run_forward(const arguments<T>& a, const options& o) {
  if (o.backend == "reference") {
    // The oracle computes in float64; the Python layer hands it float64 arrays (linea.reference.*).
    if constexpr (std::is_same_v<T, double>) {
      if (o.form == "step") throw error("the float64 reference has no decode step (state_indices); use the cpu backend");
      reference::recurrent<Rule, Read>(a);
      return;
    } else {
      throw nb::type_error("linea: the reference backend takes float64 arrays");
    }
  }
  if (o.backend != "cpu") throw nb::value_error(("linea: backend '" + o.backend + "' is not in this build").c_str());
  if (o.form == "recurrent") recurrent<Rule, Read>(a);
  else if (o.form == "chunkwise") chunkwise<Rule, Read>(a);
  else if (o.form == "step") step<Rule, Read>(a);
  else throw nb::value_error(("linea: form '" + o.form + "' is unknown; use recurrent, chunkwise or step").c_str());
}

// The forward is compiled for float32 and float64 storage. 16-bit inputs reach it widened to float32 by the
// Python layer, and o is rounded back there: on the CPU that is bit for bit linea's native bf16 / fp16 path (which
// loads to float32, computes in float32 and rounds o once; measured equal for every rule and both forms), at half
// the extension's compile time.
template <class Rule>
void forward(const nb::dict& x, const options& o) {
  with_storage(storage_from_name(o.dtype), [&]<class T>(std::type_identity<T>) {
    with_read(o.read, [&]<class Read>() {
      const arguments<T> a = arguments_of<T>(x, o);
      nb::gil_scoped_release unlocked;  // the views borrow arrays the caller holds until we return
      run_forward<Rule, Read>(a, o);
    });
  });
}

// The backward is the float64 reference today, so it is compiled for float64 arrays only (the Python layer widens
// the forward's inputs); when run_backward becomes the CPU backward, float32 joins here and in _autograd.py.
template <class Rule>
void backward(const nb::dict& x, const options& o) {
  if (storage_from_name(o.dtype) != storage::float64)
    throw nb::type_error("linea: the backward takes float64 arrays");
  with_read(o.read, [&]<class Read>() {
    const arguments<double> a = arguments_of<double>(x, o);
    const gradients<double> g = gradients_of<double>(x);
    nb::gil_scoped_release unlocked;
    run_backward<Rule, Read>(a, g);
  });
}

}  // namespace linea::python

// rules/<rule>.cpp: LINEA_PYTHON_RULE(gated_delta) instantiates both entry points for linea::gated_delta.
#define LINEA_PYTHON_RULE(rule)                                                                   \
  template void linea::python::forward<linea::rule>(const nanobind::dict&, const options&);     \
  template void linea::python::backward<linea::rule>(const nanobind::dict&, const options&)
