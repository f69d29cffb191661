// linea/forms/chunkwise.hpp — the chunkwise form: the recurrence cut into chunks of C tokens, each chunk a few
// dense matrix products (SPEC §4; derivations in docs/math/). Same arguments, same results as the recurrent form.
//
//   linea::arguments<float> a{.q = q, .k = k, .v = v, .g = g, .beta = beta, .o = o, .chunk_size = 64};
//   linea::chunkwise<linea::gated_delta>(a);
//
// chunk_size ∈ {16, 32, 64, 128}; chunks never cross a sequence boundary (cu_seqlens), and the last chunk of a
// sequence may be partial. Optional checkpoints: the state at the start of every chunk,
//   checkpoints [N, max_chunks, HV, K, V],  max_chunks = max over sequences n of ⌈length_n / chunk_size⌉,
// where checkpoints(n, c) is the state before chunk c of sequence n (checkpoints(n, 0) is the initial state).
// Entries c ≥ ⌈length_n / chunk_size⌉ of a shorter sequence are not written.
#pragma once
#include <algorithm>
#include <string>
#include <tuple>

#include "../read/concept.hpp"
#include "../rules/concepts.hpp"
#include "../backend/cpu/threads.hpp"
#include "../backend/tags.hpp"
#include "../chunk/kernel.hpp"
#include "../core/empty_call.hpp"
#include "../core/validate.hpp"
#include "../read/identity.hpp"

namespace linea {

// The checkpoints' second extent: the most chunks any sequence has.
// (Without cu_seqlens every sequence has T tokens: no loop over N, which B = 2^40 views without elements would make
// hours long.)
template <class T, class S>
index_t max_chunks(const arguments<T, S>& a, const problem& p) {
  if (a.cu_seqlens.empty()) return p.N == 0 ? 0 : chunk::chunk_count(sequence_of(a, p, 0), a.chunk_size);
  index_t m = 0;
  for (index_t n = 0; n < p.N; ++n) m = std::max(m, chunk::chunk_count(sequence_of(a, p, n), a.chunk_size));
  return m;
}

// The rule's and read's checks, then the chunkwise form's own: chunk size, checkpoints, no decode-only input.
template <class Rule, class Read, class T, class S>
problem validate_chunkwise(const arguments<T, S>& a, index_t state_rows = -1) {  // state_rows: as validate()'s
  const problem p = validate<Rule, Read>(a, state_rows);
  const index_t C = a.chunk_size;
  if (C != 16 && C != 32 && C != 64 && C != 128)
    throw error("argument 'chunk_size' = " + std::to_string(C) + " is not supported by the chunkwise form; use 16, 32, 64 or 128");
  if (!a.state_indices.empty()) throw error("argument 'state_indices' belongs to the decode step, not chunkwise");
  if (!a.checkpoints.empty())
    detail::expect_shape(a.checkpoints, "checkpoints", "[N, max_chunks, HV, K, V] (max_chunks = max over sequences of ceil(length / chunk_size))",
                         {p.N, max_chunks(a, p), p.HV, p.K, p.V});
  return p;
}

namespace detail {
template <class Backend>
struct chunkwise_impl {
  static_assert(backend::always_false<Backend>, "linea::chunkwise: this backend has no chunkwise form");
};

// One kernel (chunk/kernel.hpp: Eigen does the dense algebra, vectorised for the compiler's target) serves every
// CPU tag: cpu_arch<Arch> runs it on a.threads threads over (sequence, value head); generic on the calling thread.
template <class Arch>
struct chunkwise_impl<backend::cpu_arch<Arch>> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    const problem p = validate_chunkwise<Rule, Read>(a);
    const index_t items = p.N * p.HV;
    const int threads = cpu_backend::thread_count(a.threads, items);  // fails before anything is written
    if (forward_writes_nothing(a, p)) return;
    using kernel_t = chunk::kernel<Rule, Read, T, S>;  // kept between calls of the same sizes (threads.hpp)
    cpu_backend::parallel_items_reusing<kernel_t>(
        items, threads, std::tuple_cat(cpu_backend::problem_key(p), std::tuple(a.chunk_size)),
        [&] { return kernel_t(p, a.chunk_size); },
        [&](auto& kernel, index_t item) {
          const index_t n = item / p.HV, hv = item % p.HV;
          kernel.run(a, sequence_of(a, p, n), hv, n);
        });
  }
};

template <>
struct chunkwise_impl<backend::generic> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    const problem p = validate_chunkwise<Rule, Read>(a);
    if (forward_writes_nothing(a, p)) return;
    chunk::kernel<Rule, Read, T, S> kernel(p, a.chunk_size);
    for (index_t n = 0; n < p.N; ++n)
      for (index_t hv = 0; hv < p.HV; ++hv) kernel.run(a, sequence_of(a, p, n), hv, n);
  }
};
}  // namespace detail

template <write_rule_policy Rule, read_policy Read = read::identity, backend::backend_tag Backend = backend::cpu, class T,
          class S>
void chunkwise(const arguments<T, S>& a) {
  detail::chunkwise_impl<Backend>::template run<Rule, Read>(a);
}

}  // namespace linea
