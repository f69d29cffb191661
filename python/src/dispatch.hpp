// python/src/dispatch.hpp — from the names of one call (dtype, read, form, backend) to the one template that runs
// it. Each rules/<rule>.cpp includes this and instantiates forward<Rule> and backward<Rule> for its rule.
#pragma once
#include <chrono>
#include <string>
#include <type_traits>

#include <linea/linea.hpp>

#include "call.hpp"
#include "cuda_entry.hpp"

namespace linea::python {

template <class F>
void with_read(const std::string& read, F&& f) {
  if (read == "identity") f.template operator()<read::identity>();
  else if (read == "ccq_uniform") f.template operator()<read::ccq<read::uniform>>();
  else if (read == "ccq_decayed") f.template operator()<read::ccq<read::decayed>>();
  else throw nb::value_error(("linea: read '" + read + "' is unknown; use identity, ccq_uniform or ccq_decayed").c_str());
}

inline gpu::read_id read_id_of(const std::string& read) {
  if (read == "identity") return gpu::read_id::identity;
  if (read == "ccq_uniform") return gpu::read_id::ccq_uniform;
  if (read == "ccq_decayed") return gpu::read_id::ccq_decayed;
  throw nb::value_error(("linea: read '" + read + "' is unknown; use identity, ccq_uniform or ccq_decayed").c_str());
}

inline gpu::form_id form_id_of(const std::string& form) {
  if (form == "recurrent") return gpu::form_id::recurrent;
  if (form == "chunkwise") return gpu::form_id::chunkwise;
  if (form == "step") return gpu::form_id::step;
  throw nb::value_error(("linea: form '" + form + "' is unknown; use recurrent, chunkwise or step").c_str());
}

// Runs f() o.repeat times (more than once only to time the kernel alone: bench/python_overhead.py).
template <class F>
void repeated(const options& o, F&& f) {
  for (int i = 0; i < std::max(1, o.repeat); ++i) f();
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

// ---- CUDA ---------------------------------------------------------------------------------------------------
[[noreturn]] inline void no_cuda() {
  throw nb::value_error("linea: a CUDA tensor, but this build of linea has no CUDA backend (it was built without "
                        "nvcc; rebuild with nvcc on the PATH or /usr/local/cuda, or pass CPU tensors)");
}

// Where a CUDA call runs, and its index arrays: in device memory (read there by the kernels, as fla's are) or
// on the host (into `a`: linea copies and checks them).
template <class T>
gpu::launch_info launch_of(const named_arrays& x, const options& o, device& on, arguments<T>& a) {
  gpu::launch_info l;
  l.device = on.id, l.stream = o.stream;
  device host;  // the CPU
  host.known = true;
  const auto on_host = [&](int i) { return x.info(i).where.cpu(); };
  if (const int i = field("cu_seqlens"); x[i].is_valid()) {
    if (on_host(i)) {
      a.cu_seqlens = seqlens_of(x, i, host);
    } else {
      const cu_seqlens_span s = seqlens_of(x, i, on);
      l.cu_seqlens_wide = !s.is_int32();
      l.cu_seqlens = s.is_int32() ? static_cast<const void*>(s.as_int32().data())
                                  : static_cast<const void*>(s.as_int64().data());
      l.cu_seqlens_size = s.size();
    }
  }
  if (const int i = field("state_indices"); x[i].is_valid()) {
    if (on_host(i)) {
      a.state_indices = span_of<std::int32_t>(x, i, host);
    } else {
      const auto s = span_of<std::int32_t>(x, i, on);
      l.state_indices = s.data(), l.state_indices_size = s.size();
    }
  }
  return l;
}

template <class Rule>
void forward_cuda(const named_arrays& x, const options& o, device& on) {
  if constexpr (!gpu::compiled) {
    (void)x, (void)o, (void)on;
    no_cuda();
  } else {
    const auto run = [&]<class T>(std::type_identity<T>) {
      arguments<T> a = arguments_of<T>(x, o, on, /*host_indices=*/false);
      const gpu::launch_info l = launch_of(x, o, on, a);
      const gpu::form_id form = form_id_of(o.form);
      const gpu::read_id read = read_id_of(o.read);
      nb::gil_scoped_release unlocked;
      repeated(o, [&] { gpu::forward<Rule, T>(a, form, read, l); });
    };
    switch (storage_from_name(o.dtype)) {
      case storage::float32: run(std::type_identity<float>{}); break;
      case storage::bfloat16: run(std::type_identity<bf16>{}); break;
      case storage::float16: run(std::type_identity<fp16>{}); break;
      case storage::float64: throw nb::type_error("linea: the CUDA backend takes float32, bfloat16 or float16 tensors "
                                                  "(float64: linea.reference, or .cpu())");
    }
  }
}

template <class Rule>
void backward_cuda(const named_arrays& x, const options& o, device& on) {
  if constexpr (!gpu::compiled) {
    (void)x, (void)o, (void)on;
    no_cuda();
  } else {
    if (storage_from_name(o.dtype) != storage::float32)
      throw nb::type_error("linea: the CUDA backward takes float32 arrays (the Python layer widens 16-bit ones)");
    const gpu::read_id read = read_id_of(o.read);
    if (!gpu::has_backward<Rule>(read))
      throw nb::value_error("linea: this rule has no CUDA backward; its gradients run on the CPU, e.g. with .cpu() "
                            "tensors");
    arguments<float> a = arguments_of<float>(x, o, on, /*host_indices=*/false);
    const gpu::launch_info l = launch_of(x, o, on, a);
    const gradients<float> g = gradients_of<float>(x, on);
    nb::gil_scoped_release unlocked;
    gpu::backward<Rule>(a, g, read, l);
  }
}

// ---- entry points -------------------------------------------------------------------------------------------

// On the CPU the forward is compiled for float32 and float64 storage. 16-bit inputs reach it widened to float32 by
// the Python layer, and o is rounded back there: on the CPU that is bit for bit linea's native bf16 / fp16 path
// (which loads to float32, computes in float32 and rounds o once; measured equal for every rule and both forms), at
// half the extension's compile time. The CUDA backend takes 16-bit inputs as they are.
template <class Rule>
void forward(const named_arrays& x, const options& o) {
  device on;
  if (o.backend == "cuda") return forward_cuda<Rule>(x, o, on);
  on.known = true;  // the CPU backends: every array in CPU memory
  with_storage(storage_from_name(o.dtype), [&]<class T>(std::type_identity<T>) {
    with_read(o.read, [&]<class Read>() {
      const arguments<T> a = arguments_of<T>(x, o, on);
      nb::gil_scoped_release unlocked;  // the views borrow arrays the caller holds until we return
      repeated(o, [&] { run_forward<Rule, Read>(a, o); });
    });
  });
}

// The backward: linea's CPU backward (float32, float64), the float64 reference for linea.reference.*, or the CUDA
// backward (float32). The Python layer widens 16-bit inputs to float32 and rounds the gradients back.
template <class Rule>
void backward(const named_arrays& x, const options& o) {
  device on;
  // (the forward's checks: an unknown string is an error, not the CPU backward; the decode step updates a state
  // pool in place and has no gradient, on any backend)
  if (o.form == "step")
    throw nb::value_error("linea: the decode step (state_indices) has no backward; use the recurrent or chunkwise form");
  if (o.form != "recurrent" && o.form != "chunkwise")
    throw nb::value_error(("linea: form '" + o.form + "' is unknown; use recurrent or chunkwise").c_str());
  if (o.backend == "cuda") return backward_cuda<Rule>(x, o, on);
  if (o.backend != "cpu" && o.backend != "reference")
    throw nb::value_error(("linea: backend '" + o.backend + "' is not in this build").c_str());
  on.known = true;
  with_storage(storage_from_name(o.dtype), [&]<class T>(std::type_identity<T>) {
    with_read(o.read, [&]<class Read>() {
      const arguments<T> a = arguments_of<T>(x, o, on);
      const gradients<T> g = gradients_of<T>(x, on);
      nb::gil_scoped_release unlocked;
      if (o.backend == "reference") {
        if constexpr (!std::is_same_v<T, double>) throw error("the reference backward takes float64 arrays");
        else reference::backward<Rule, Read>(a, g);
      } else {
        linea::backward<Rule, Read, backend::cpu>(a, g);
      }
    });
  });
}

}  // namespace linea::python

// rules/<rule>.cpp: LINEA_PYTHON_RULE(gated_delta) instantiates both entry points for linea::gated_delta.
#define LINEA_PYTHON_RULE(rule)                                                                           \
  template void linea::python::forward<linea::rule>(const named_arrays&, const options&);              \
  template void linea::python::backward<linea::rule>(const named_arrays&, const options&)
