// linea/rules/policy.hpp — the vocabulary of write-rule policies: what shape of algebra a policy needs (its kind),
// which per-token inputs it reads, and the lanes its hooks compute on.
//
// A hook is written once, templated on Lanes, and called by every path:
//   scalar_lanes<R>         one value (the reference, the generic loops, CUDA registers and shared-memory rows)
//   cpu_backend::lanes<R,A> an xsimd batch of key or value lanes (the SIMD kernel)
// Lanes provides  type, splat(R) -> type  and  at(row, i) -> type  (the lanes of row starting at i).
#pragma once
#include "../config.hpp"

namespace linea {

// How a decay enters the chunk algebra (SPEC §4): the shape of the cumulative log decay G of a chunk.
enum class decay_kind {
  none,     // G = 0: no factors at all
  scalar,   // G is one number per token: Γ scales whole rows, exp(G_r − G_s) is an L×L matrix
  per_key,  // G is one number per token and key channel: Γ scales elements, products need secondary chunks
};

// How an update enters the chunk algebra: an erasing update needs the UT transform (I + A)⁻¹.
enum class update_kind {
  additive,  // u_t = (w ⊙ v)_t: no dependence on the state
  erase,     // u_t = w ⊙ v − S'ᵀ(b ⊙ k): a triangular solve per chunk
};

// The per-token inputs a policy reads (a bit set). The loaders load these and only these; validation
// requires them and rejects the others.
namespace input {
inline constexpr unsigned none = 0;
inline constexpr unsigned g = 1u << 0;     // scalar log decay [B, T, HV]
inline constexpr unsigned gk = 1u << 1;    // per-key log decay [B, T, HV, K]
inline constexpr unsigned beta = 1u << 2;  // delta-rule strength [B, T, HV]
inline constexpr unsigned b = 1u << 3;     // erase gate [B, T, HV, K]
inline constexpr unsigned w = 1u << 4;     // write gate [B, T, HV, V]
}  // namespace input

constexpr bool reads(unsigned inputs, unsigned which) { return (inputs & which) != 0; }

// One lane: the hooks on plain values. `row` is anything indexable (a pointer, a shared-memory row, a register
// array, or a single loaded element seen as its row: lane_value below).
template <class R>
struct scalar_lanes {
  using type = R;
  LINEA_HD static R splat(R x) { return x; }
  template <class Row>
  LINEA_HD static R at(const Row& row, index_t i) { return R(row[i]); }
};

// One element of a row, loaded on its own (CUDA kernels read inputs element by element): row[i] for any i is
// that element, so a hook can index the row with the lane it was asked about.
template <class R>
struct lane_value {
  R value;
  LINEA_HD R operator[](index_t) const { return value; }
};

namespace detail {
template <class Lanes, class R>
struct pick_lanes {
  using type = Lanes;
};
template <class R>
struct pick_lanes<void, R> {
  using type = scalar_lanes<R>;
};
}  // namespace detail
// The lanes of a hook call: the ones named, or one lane of the token's value type.
template <class Lanes, class R>
using lanes_or_scalar = typename detail::pick_lanes<Lanes, R>::type;

}  // namespace linea
