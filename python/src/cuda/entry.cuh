// python/src/cuda/entry.cuh — the definitions of cuda_entry.hpp, instantiated for every rule by python/src/cuda/rules.cu.
// The forms and the backwards come from linea's shared instance library (-DLINEA_CUDA_EXTERN_INSTANCES:
// tests/backend/cuda/instances/, compiled once for the C++ tests and this module); what this unit compiles is the
// dispatch.
#pragma once
#include <cuda_runtime.h>

#include <type_traits>

#include <linea/cuda.hpp>

#include "../cuda_entry.hpp"

namespace linea::python::gpu {

// The call's device current for its duration (torch leaves another one current when q is on cuda:1).
class device_scope {
 public:
  explicit device_scope(int device) {
    LINEA_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) LINEA_CUDA_CHECK(cudaSetDevice(device));
  }
  ~device_scope() {
    int now = previous_;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) (void)cudaSetDevice(previous_);
  }
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

 private:
  int previous_ = 0;
};

inline cuda::launch launch_of(const launch_info& l) {
  cuda::launch c;
  c.stream = reinterpret_cast<cudaStream_t>(l.stream);
  if (l.cu_seqlens) {
    if (l.cu_seqlens_wide) c.cu_seqlens = {static_cast<const std::int64_t*>(l.cu_seqlens), l.cu_seqlens_size};
    else c.cu_seqlens = {static_cast<const std::int32_t*>(l.cu_seqlens), l.cu_seqlens_size};
  }
  if (l.state_indices) c.state_indices = {l.state_indices, l.state_indices_size};
  return c;
}

template <class Rule, class Read, class T>
void run_form(const arguments<T>& a, form_id form, const cuda::launch& c) {
  switch (form) {
    case form_id::recurrent: recurrent<Rule, Read, backend::cuda>(a, c); break;
    case form_id::chunkwise: chunkwise<Rule, Read, backend::cuda>(a, c); break;
    case form_id::step: step<Rule, Read, backend::cuda>(a, c); break;
  }
}

template <class Rule, class T>
void forward(const arguments<T>& a, form_id form, read_id read, const launch_info& l) {
  const device_scope on(l.device);
  const cuda::launch c = launch_of(l);
  switch (read) {
    case read_id::identity: run_form<Rule, read::identity>(a, form, c); break;
    case read_id::ccq_uniform:
    case read_id::ccq_decayed:
      // The shared instances have the CCQ reads for float and bf16; the Python layer widens float16 for them.
      if constexpr (std::is_same_v<T, fp16>) {
        throw error("the CUDA CCQ read takes float32 or bfloat16 inputs here");
      } else if (read == read_id::ccq_uniform) {
        run_form<Rule, read::ccq<read::uniform>>(a, form, c);
      } else {
        run_form<Rule, read::ccq<read::decayed>>(a, form, c);
      }
      break;
  }
}

template <class Rule>
bool has_backward(read_id) {
  return cuda_detail::bwd::supported_rule<Rule>;  // every read: the CCQ read's backward composes the rule's
}

// The backward on the caller's stream, with the workspace linea keeps per (device, stream).
template <class Rule>
void backward(const arguments<float>& a, const gradients<float>& g, read_id read, const launch_info& l) {
  if constexpr (cuda_detail::bwd::supported_rule<Rule>) {
    const device_scope on(l.device);
    const cuda::launch c = launch_of(l);
    switch (read) {
      case read_id::identity: linea::backward<Rule, read::identity, backend::cuda>(a, g, c); break;
      case read_id::ccq_uniform: linea::backward<Rule, read::ccq<read::uniform>, backend::cuda>(a, g, c); break;
      case read_id::ccq_decayed: linea::backward<Rule, read::ccq<read::decayed>, backend::cuda>(a, g, c); break;
    }
  } else {
    (void)a, (void)g, (void)read, (void)l;
    throw error("this rule has no CUDA backward; run its backward on the CPU (.cpu())");
  }
}

}  // namespace linea::python::gpu

// python/src/cuda/rules.cu: LINEA_PYTHON_CUDA_RULE(kda) instantiates the entry points for linea::kda.
#define LINEA_PYTHON_CUDA_RULE(rule)                                                                             \
  template void linea::python::gpu::forward<linea::rule, float>(const linea::arguments<float>&,                  \
                                                                linea::python::gpu::form_id,                     \
                                                                linea::python::gpu::read_id,                     \
                                                                const linea::python::gpu::launch_info&);         \
  template void linea::python::gpu::forward<linea::rule, linea::bf16>(const linea::arguments<linea::bf16>&,      \
                                                                      linea::python::gpu::form_id,               \
                                                                      linea::python::gpu::read_id,               \
                                                                      const linea::python::gpu::launch_info&);   \
  template void linea::python::gpu::forward<linea::rule, linea::fp16>(const linea::arguments<linea::fp16>&,      \
                                                                      linea::python::gpu::form_id,               \
                                                                      linea::python::gpu::read_id,               \
                                                                      const linea::python::gpu::launch_info&);   \
  template bool linea::python::gpu::has_backward<linea::rule>(linea::python::gpu::read_id);                      \
  template void linea::python::gpu::backward<linea::rule>(const linea::arguments<float>&,                        \
                                                          const linea::gradients<float>&,                        \
                                                          linea::python::gpu::read_id,                           \
                                                          const linea::python::gpu::launch_info&)
