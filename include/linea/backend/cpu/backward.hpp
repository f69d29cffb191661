// linea/backend/cpu/backward.hpp — the CPU backward: work items (sequence, key head) on a.threads threads.
//
// An item runs every value head of one key head's group (backward_head.hpp), so the group's dq, dk (sums over
// its value heads) are written by that item alone: no locks, no atomics. Sums across items (dA_log, ddt_bias, and
// g_gamma's dg) are kept per sequence in float64 and added in a fixed order at the end (backward_sums.hpp), so
// the result does not depend on the thread count. Memory per item: ⌈L/C⌉·K·V boundary states (+ the read's
// statistics), K·V for dS, (C+1)·K·16 for one column tile of the chunk's recomputed states (K·16 without erase
// and decay), C·(9K + 4V) for the chunk's per-token coefficients and row sums, L·K for the group's dq̂, dk̂.
#pragma once
#include <algorithm>

#include "../isa.hpp"
#include "../../core/empty_call.hpp"
#include "../../core/gradients.hpp"
#include "../../reference/backward.hpp"
#include "backward_head.hpp"
#include "backward_sums.hpp"
#include "threads.hpp"

namespace linea::cpu_backend::inline LINEA_ISA {

// `Arch`: an xsimd architecture, or backend::scalar_arch. `threads`: the call's thread count (arguments::threads,
// 0 = one per hardware thread); the generic backend passes 1.
template <class Rule, class Read, class Arch, class T, class S>
void backward(const arguments<T, S>& a, const gradients<T, S>& g, int threads) {
  static_assert(differentiable_rule<Rule>, "linea::backward: the rule's policies have no adjoint hooks");
  // Every check before anything is written: the reference backward's (forward arguments, gradient views), then
  // the thread count.
  const problem p = reference::validate_backward<Rule, Read>(a, g);
  const index_t items = p.N * p.H;
  threads = thread_count(threads, items);
  if (detail::backward_writes_no_state_gradient(g, p)) {  // no tokens: the gate parameters' gradients are 0
    for (index_t i = 0; i < g.dA_log.extent(0); ++i) g.dA_log(i) = S(0);
    for (index_t i = 0; i < g.ddt_bias.extent(0); ++i) g.ddt_bias(i) = S(0);
    return;
  }
  // The checkpoint interval: chunk_size, but never longer than the longest sequence (the chunk scratch is
  // (C+1)·K·16 + C·(9K + 4V) per thread, and a chunk_size meant for another form may be large).
  index_t longest = 0;
  for (index_t n = 0; n < p.N; ++n) longest = std::max(longest, sequence_of(a, p, n).length());
  const index_t C = std::max<index_t>(1, std::min<index_t>(a.chunk_size, longest));
  backward_sums sums(a, g, p, !Read::is_identity);
  parallel_items(
      items, threads, [&](int) { return backward_head<Rule, Read, T, S, Arch>(p, C); },
      [&](auto& head, index_t item) {
        const index_t n = item / p.H, h = item % p.H;
        head.run(a, g, sequence_of(a, p, n), n, h, sums);
      });
  sums.store(g);
}

}  // namespace linea::cpu_backend
