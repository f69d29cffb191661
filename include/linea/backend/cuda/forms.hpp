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
#include "../../forms/chunkwise.hpp"
#include "../../forms/step.hpp"

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

// The same checks as the CPU chunkwise form (chunk_size, checkpoints' shape, no state_indices). The kernels' own
// chunk lengths are fixed (32 or 64 tokens); chunk_size changes nothing in the results, which are the same function.
template <>
struct chunkwise_impl<backend::cuda> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    const problem p = validate_chunkwise<Rule, Read>(a);
    cuda_detail::run<Rule, Read, cuda_detail::form::chunkwise>(a, p);
  }
};

}  // namespace detail

}  // namespace linea
