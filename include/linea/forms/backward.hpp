// linea/forms/backward.hpp — the backward of every form, one API (SPEC §6):
//
//   linea::backward<Rule, Read, Backend>(a, g);   // a: the forward's arguments, g: core/gradients.hpp
//
// (Minimal version from the bwd-cuda branch: the primary template and the call; the bwd-cpu branch owns this file
// and adds the reference / CPU specialisations.)
#pragma once
#include "../backend/tags.hpp"
#include "../core/gradients.hpp"
#include "../read/identity.hpp"

namespace linea {
namespace detail {
template <class Backend>
struct backward_impl {
  static_assert(backend::always_false<Backend>, "linea::backward: no backward on this backend");
};
}  // namespace detail

template <class Rule, class Read = read::identity, class Backend = backend::cpu, class T, class S>
void backward(const arguments<T, S>& a, const gradients<T, S>& g) {
  detail::backward_impl<Backend>::template run<Rule, Read>(a, g);
}

}  // namespace linea
