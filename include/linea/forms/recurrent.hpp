// linea/forms/recurrent.hpp — the recurrent form: token by token over every sequence and value head.
//
//   linea::recurrent<linea::gated_delta>(args);                                    // CPU, identity read
//   linea::recurrent<linea::kda, linea::read::identity, linea::backend::reference>(args);  // float64 oracle
#pragma once
#include "../read/concept.hpp"
#include "../rules/concepts.hpp"
#include "../backend/cpu/recurrent.hpp"
#include "../backend/tags.hpp"
#include "../core/empty_call.hpp"
#include "../read/identity.hpp"
#include "../reference/recurrence.hpp"
#include "recurrent_head.hpp"

namespace linea {

namespace detail {
template <class Backend>
struct recurrent_impl {
  static_assert(backend::always_false<Backend>, "linea::recurrent: this backend has no recurrent form");
};

template <>
struct recurrent_impl<backend::reference> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    reference::recurrent<Rule, Read>(a);
  }
};

template <class T, class S>
void check_recurrent_only(const arguments<T, S>& a) {
  if (!a.state_indices.empty()) throw error("argument 'state_indices' belongs to the decode step, not recurrent");
  if (!a.checkpoints.empty()) throw error("argument 'checkpoints' is produced by the chunkwise form only");
}

// Plain fused loops: the fallback, and what the SIMD kernels are tested against.
template <>
struct recurrent_impl<backend::generic> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    const problem p = validate<Rule, Read>(a);
    check_recurrent_only(a);
    if (forward_writes_nothing(a, p)) return;
    recurrent_head<Rule, Read, T, S> head(p);
    for (index_t n = 0; n < p.N; ++n)
      for (index_t hv = 0; hv < p.HV; ++hv) head.run(a, sequence_of(a, p, n), hv, n, n);
  }
};

// The SIMD kernels (backend/cpu/recurrent.hpp), threads over (sequence, value head).
template <class Arch>
struct recurrent_impl<backend::cpu_arch<Arch>> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    const problem p = validate<Rule, Read>(a);
    check_recurrent_only(a);
    cpu_backend::thread_count(a.threads, 1);  // a bad thread count fails before anything is written
    if (p.N == 0 || forward_writes_nothing(a, p)) return;  // nothing to compute, no items to share out
    cpu_backend::recurrent<Rule, Read, cpu_backend::resolve_arch<Arch>>(a, p);
  }
};
}  // namespace detail

template <write_rule_policy Rule, read_policy Read = read::identity, backend::backend_tag Backend = backend::cpu, class T,
          class S>
void recurrent(const arguments<T, S>& a) {
  detail::recurrent_impl<Backend>::template run<Rule, Read>(a);
}

}  // namespace linea
