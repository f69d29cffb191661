// linea/forms/recurrent.hpp — the recurrent form: token by token over every sequence and value head.
//
//   linea::recurrent<linea::gated_delta>(args);                                    // CPU, identity read
//   linea::recurrent<linea::kda, linea::read::identity, linea::backend::reference>(args);  // float64 oracle
#pragma once
#include "../backend/tags.hpp"
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

template <>
struct recurrent_impl<backend::cpu> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    const problem p = validate<Rule, Read>(a);
    if (!a.state_indices.empty()) throw error("argument 'state_indices' belongs to the decode step, not recurrent");
    if (!a.checkpoints.empty()) throw error("argument 'checkpoints' is produced by the chunkwise form only");
    recurrent_head<Rule, Read, T, S> head(p);
    for (index_t n = 0; n < p.N; ++n)
      for (index_t hv = 0; hv < p.HV; ++hv) head.run(a, sequence_of(a, p, n), hv, n, n);
  }
};
}  // namespace detail

template <class Rule, class Read = read::identity, class Backend = backend::cpu, class T, class S>
void recurrent(const arguments<T, S>& a) {
  detail::recurrent_impl<Backend>::template run<Rule, Read>(a);
}

}  // namespace linea
