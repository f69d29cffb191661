// linea/forms/backward.hpp — the backward: gradients of every input of a forward call (SPEC §6).
//
//   linea::arguments<float> a{.q = q, .k = k, .v = v, .g = g, .beta = beta, .o = o};   // the forward's arguments
//   linea::chunkwise<linea::gated_delta>(a);
//   linea::gradients<float> grads{.d_o = d_o, .dq = dq, .dk = dk, .dv = dv, .dg = dg, .dbeta = dbeta};
//   linea::backward<linea::gated_delta>(a, grads);                                      // CPU, identity read
//
// Same Rule and Read as the forward; the backward reads only the forward's inputs (not o), so it may run without
// the forward having run. Backends:
//   reference   linea::reference::backward: the float64 reverse-time recurrence (reference/backward.hpp)
//   cpu         the chunkwise backward of backend/cpu/backward.hpp: states stored at chunk boundaries
//               (arguments::chunk_size tokens apart, any positive value), recomputed per chunk; threads over
//               (sequence, key head) by arguments::threads; xsimd column tiles of the state (backend/cpu/backward_tile.hpp)
//   generic     the same algorithm with one scalar lane on the calling thread
//   cuda        backend/cuda/backward.hpp, included by <linea/cuda.hpp>
#pragma once
#include "../backend/cpu/backward.hpp"
#include "../backend/cpu/simd.hpp"
#include "../backend/tags.hpp"
#include "../core/gradients.hpp"
#include "../read/concept.hpp"
#include "../read/identity.hpp"
#include "../reference/backward.hpp"
#include "../rules/concepts.hpp"

namespace linea {

namespace detail {
template <class Backend>
struct backward_impl {
  static_assert(backend::always_false<Backend>, "linea::backward: no backward on this backend");
};

template <>
struct backward_impl<backend::reference> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a, const gradients<T, S>& g) {
    reference::backward<Rule, Read>(a, g);
  }
};

template <class Arch>
struct backward_impl<backend::cpu_arch<Arch>> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a, const gradients<T, S>& g) {
    cpu_backend::backward<Rule, Read, cpu_backend::resolve_arch<Arch>>(a, g, a.threads);
  }
};

template <>
struct backward_impl<backend::generic> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a, const gradients<T, S>& g) {
    cpu_backend::backward<Rule, Read, backend::scalar_arch>(a, g, 1);
  }
};
}  // namespace detail

template <write_rule_policy Rule, read_policy Read = read::identity, backend::backend_tag Backend = backend::cpu, class T,
          class S>
void backward(const arguments<T, S>& a, const gradients<T, S>& g) {
  detail::backward_impl<Backend>::template run<Rule, Read>(a, g);
}

}  // namespace linea
