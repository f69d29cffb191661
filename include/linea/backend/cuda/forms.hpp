// linea/backend/cuda/forms.hpp — the CUDA backend behind the one API:
//
//   linea::recurrent<linea::kda, linea::read::identity, linea::backend::cuda>(args);
//   linea::step<linea::gated_delta, linea::read::ccq<>, linea::backend::cuda>(args);
//   linea::chunkwise<linea::gated_delta, linea::read::identity, linea::backend::cuda>(args);
//
// Same arguments as the CPU, with device pointers in the views (cu_seqlens and state_indices stay host spans:
// they are validated on the host and copied). Arguments are validated on the host before anything is launched;
// launches go to the default stream and are asynchronous, like any CUDA call.
#pragma once
#include "launch.hpp"

#include "../../forms/recurrent.hpp"
#include "../../forms/step.hpp"
#if __has_include("../../forms/chunkwise.hpp")
#include "../../forms/chunkwise.hpp"
#define LINEA_CUDA_HAS_CPU_CHUNKWISE 1
#endif

namespace linea {
namespace detail {

template <>
struct recurrent_impl<backend::cuda> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    const problem p = validate<Rule, Read>(a);
    if (!a.state_indices.empty()) throw error("argument 'state_indices' belongs to the decode step, not recurrent");
    cuda_detail::run<Rule, Read, cuda_detail::form::recurrent>(a, p);
  }
};

template <>
struct step_impl<backend::cuda> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    const problem p = validate_step<Rule, Read>(a);
    cuda_detail::run<Rule, Read, cuda_detail::form::step>(a, p);
  }
};

#if defined(LINEA_CUDA_HAS_CPU_CHUNKWISE)
// The same checks as the CPU chunkwise form (chunk_size, checkpoints' shape, no state_indices). The kernel's own
// chunk length is fixed (32 tokens); chunk_size changes nothing in the results, which are the same function.
template <>
struct chunkwise_impl<backend::cuda> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    const problem p = validate_chunkwise<Rule, Read>(a);
    cuda_detail::run<Rule, Read, cuda_detail::form::chunkwise>(a, p);
  }
};
#endif

}  // namespace detail

#if !defined(LINEA_CUDA_HAS_CPU_CHUNKWISE)
// Until the CPU chunkwise form exists, the chunkwise entry point is declared here for the CUDA backend alone.
template <class Rule, class Read = read::identity, class Backend = backend::cuda, class T, class S>
void chunkwise(const arguments<T, S>& a) {
  static_assert(std::is_same_v<Backend, backend::cuda>, "linea::chunkwise: only the CUDA backend is built here");
  const problem p = validate<Rule, Read>(a);
  if (!a.state_indices.empty()) throw error("argument 'state_indices' belongs to the decode step, not chunkwise");
  cuda_detail::run<Rule, Read, cuda_detail::form::chunkwise>(a, p);
}
#endif

}  // namespace linea
