// linea/backend/cuda/forms.hpp — the CUDA backend behind the one API:
//
//   linea::recurrent<linea::kda, linea::read::identity, linea::backend::cuda>(args);
//   linea::step<linea::gated_delta, linea::read::ccq<>, linea::backend::cuda>(args, {.stream = s});
//   linea::chunkwise<linea::gated_delta, linea::read::identity, linea::backend::cuda>(args, launch);
//
// Same arguments as the CPU, with device pointers in the views; the optional second argument (cuda::launch,
// launch_options.hpp) names the stream, the workspace and device-side cu_seqlens / state_indices. Arguments are
// validated on the host before anything is launched; launches are asynchronous, on the call's stream.
#pragma once
#include "call.hpp"
#include "segments.hpp"

#include "../../forms/recurrent.hpp"
#include "../../forms/chunkwise.hpp"
#include "../../forms/step.hpp"

namespace linea {
namespace detail {

// Device-side cu_seqlens: the host knows their count (N + 1), not their values (cuda::launch::check_indices).
template <class T, class S>
index_t device_sequences(const arguments<T, S>& a, const cuda::launch& l) {
  if (l.cu_seqlens.empty()) return -1;
  if (!a.cu_seqlens.empty()) throw error("argument 'cu_seqlens' is given twice: as a host span and on the device");
  if (l.cu_seqlens.size < 2)
    throw error("argument 'cu_seqlens' (on the device) has " + std::to_string(l.cu_seqlens.size) +
                " entries; it needs N+1 >= 2");
  if (!a.q.empty() && a.q.extent(0) != 1)
    throw error("argument 'cu_seqlens' needs B = 1 (packed sequences), but q has shape " + shape_string(a.q));
  return static_cast<index_t>(l.cu_seqlens.size) - 1;
}

inline void expect_no_device_indices(const cuda::launch& l, const char* form) {
  if (!l.state_indices.empty())
    throw error(std::string("argument 'state_indices' (on the device) belongs to the decode step, not ") + form);
}

template <>
struct recurrent_impl<backend::cuda> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a, const cuda::launch& l = {}) {
    const problem p = validate<Rule, Read>(a, device_sequences(a, l));
    if (!a.state_indices.empty()) throw error("argument 'state_indices' belongs to the decode step, not recurrent");
    expect_no_device_indices(l, "recurrent");
    if (forward_writes_nothing(a, p)) return;  // no tokens, no states asked for (core/empty_call.hpp)
    cuda_detail::run<Rule, Read, cuda_detail::form::recurrent>(a, p, l);
  }
};

template <>
struct step_impl<backend::cuda> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a, const cuda::launch& l = {}) {
    if (!l.cu_seqlens.empty()) throw error("argument 'cu_seqlens' is not used by the decode step (one token per row)");
    const index_t on_device = l.state_indices.empty() ? -1 : static_cast<index_t>(l.state_indices.size);
    const problem p = validate_step<Rule, Read>(a, on_device);
    cuda_detail::run<Rule, Read, cuda_detail::form::step>(a, p, l);
  }
};

// The same checks as the CPU chunkwise form (chunk_size, checkpoints' shape, no state_indices). The kernels' own
// chunk lengths are fixed (32 or 64 tokens); chunk_size changes nothing in the results, which are the same function.
template <>
struct chunkwise_impl<backend::cuda> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a, const cuda::launch& l = {}) {
    const problem p = validate_chunkwise<Rule, Read>(a, device_sequences(a, l));
    expect_no_device_indices(l, "chunkwise");
    // Before any launch: the 16-bit CCQ path (ccq_chunked.hpp) writes the statistics before its main pass would
    // meet the kernels' limit (launch_chunk).
    if (p.K > cuda_detail::chunk_kp || p.V > cuda_detail::chunk_vp)
      throw error("the CUDA chunkwise form supports K, V <= 128, but K = " + std::to_string(p.K) +
                  ", V = " + std::to_string(p.V) + " (use the recurrent form)");
    if (forward_writes_nothing(a, p)) return;  // no tokens, no states asked for (core/empty_call.hpp)
    if (cuda_detail::run_segmented<Rule, Read>(a, p, l)) return;  // long sequences cut into pieces (segments.hpp)
    cuda_detail::run<Rule, Read, cuda_detail::form::chunkwise>(a, p, l);
  }
};

}  // namespace detail

// The forms with the CUDA backend's launch options (stream, workspace, device-side indices). Backend is named for
// symmetry with the one-argument forms and must be backend::cuda.
template <write_rule_policy Rule, read_policy Read = read::identity, class Backend = backend::cuda, class T, class S>
  requires std::same_as<Backend, backend::cuda>
void recurrent(const arguments<T, S>& a, const cuda::launch& l) {
  detail::recurrent_impl<backend::cuda>::template run<Rule, Read>(a, l);
}
template <write_rule_policy Rule, read_policy Read = read::identity, class Backend = backend::cuda, class T, class S>
  requires std::same_as<Backend, backend::cuda>
void chunkwise(const arguments<T, S>& a, const cuda::launch& l) {
  detail::chunkwise_impl<backend::cuda>::template run<Rule, Read>(a, l);
}
template <write_rule_policy Rule, read_policy Read = read::identity, class Backend = backend::cuda, class T, class S>
  requires std::same_as<Backend, backend::cuda>
void step(const arguments<T, S>& a, const cuda::launch& l) {
  detail::step_impl<backend::cuda>::template run<Rule, Read>(a, l);
}

}  // namespace linea
