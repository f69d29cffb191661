// linea/read/concept.hpp — what a read policy must provide (read/identity.hpp documents each piece).
#pragma once
#include <concepts>

#include "../core/arguments.hpp"

namespace linea {

template <class Read>
concept read_policy = requires(const arguments<float>& a, const problem& p) {
  { Read::is_identity } -> std::convertible_to<bool>;  // q̃ = q: the fast paths need no query buffer
  Read::validate(a, p);                                  // its own argument checks
  typename Read::template carried<float>;                // its state for the token-by-token forms
  typename Read::template chunk_carried<float>;          // and for the chunkwise form
};

}  // namespace linea
