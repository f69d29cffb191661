// linea/rules/concepts.hpp — what a decay policy, an update policy and a write rule must provide.
//
// A new policy that misses a piece fails here, with the compiler naming the requirement, instead of being
// half-used by some backend.
#pragma once
#include <concepts>
#include <type_traits>

#include "policy.hpp"
#include "token.hpp"

namespace linea {

template <class D>
concept decay_policy = requires(const token<float>& xf, const token<double>& xd, index_t i) {
  requires std::same_as<std::remove_cv_t<decltype(D::kind)>, decay_kind>;
  requires std::same_as<std::remove_cv_t<decltype(D::inputs)>, unsigned>;
  { D::log_alpha(xf, i) } -> std::same_as<float>;
  { D::log_alpha(xd, i) } -> std::same_as<double>;
};

template <class U>
concept update_policy = requires(const token<float>& xf, const token<double>& xd, index_t i) {
  requires std::same_as<std::remove_cv_t<decltype(U::kind)>, update_kind>;
  requires std::same_as<std::remove_cv_t<decltype(U::inputs)>, unsigned>;
  { U::erase_gate(xf, i) } -> std::same_as<float>;
  { U::write_gate(xf, i) } -> std::same_as<float>;
  { U::erase_gate(xd, i) } -> std::same_as<double>;
  { U::write_gate(xd, i) } -> std::same_as<double>;
};

template <class Rule>
concept write_rule_policy = requires {
  typename Rule::decay;
  typename Rule::update;
  requires decay_policy<typename Rule::decay>;
  requires update_policy<typename Rule::update>;
};

namespace detail {
// What an adjoint hook writes into: dx.g, dx.gk[i], dx.beta, dx.b[i], dx.w[j].
struct token_gradient_archetype {
  double g = 0, beta = 0;
  double *gk = nullptr, *b = nullptr, *w = nullptr;
};
}  // namespace detail

// A rule the backward can run: each policy has the adjoint of its hooks (rules/decay.hpp, rules/update.hpp).
template <class Rule>
concept differentiable_rule =
    write_rule_policy<Rule> && requires(const double* d, index_t n, detail::token_gradient_archetype& dx) {
      Rule::decay::log_alpha_adjoint(d, n, dx);
      Rule::update::gates_adjoint(d, n, d, n, dx);
    };

}  // namespace linea
