// linea/forms/step.hpp — the single-token decode step over a batch of states, as serving engines call it.
//
// q, k [B, 1, H, K], v [B, 1, HV, V]: one token per batch row. The states form a pool [N, HV, K, V]:
// row b reads initial_state(state_indices[b]) and writes final_state(state_indices[b]) (the two views may
// be the same buffer: the update is in place). Without state_indices, row b uses state b (N = B).
// An index of −1 skips the row: no state is read or written and its output (and residual) row is set to zero.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "../read/concept.hpp"
#include "../rules/concepts.hpp"
#include "../backend/cpu/recurrent.hpp"
#include "../backend/tags.hpp"
#include "../read/identity.hpp"
#include "recurrent_head.hpp"

namespace linea {

namespace detail {

// The pool's row count: from the state views when indices are given, else the batch.
template <class T, class S>
index_t state_pool_rows(const arguments<T, S>& a, bool indexed) {
  if (!indexed) return a.q.extent(0);
  if (!a.initial_state.empty()) return a.initial_state.extent(0);
  if (!a.final_state.empty()) return a.final_state.extent(0);
  return 0;
}

// `device_indices`: the length of state indices that a backend holds on the device (cuda::launch::state_indices),
// whose values the host cannot read — they are the backend's to treat (docs/usage.md); −1: none.
template <class Rule, class Read, class T, class S>
problem validate_step(const arguments<T, S>& a, index_t device_indices = -1) {
  if (!a.q.empty() && a.q.extent(1) != 1)
    throw error("argument 'q' has shape " + shape_string(a.q) + "; the decode step takes one token per row (T = 1)");
  if (!a.cu_seqlens.empty()) throw error("argument 'cu_seqlens' is not used by the decode step (one token per row)");
  if (!a.checkpoints.empty()) throw error("argument 'checkpoints' is produced by the chunkwise form only");
  // The normaliser needs z_t = Σ_{j≤t} k_j over the whole sequence, which no state carries between steps.
  if (a.normalize)
    throw error("argument 'normalize' is not supported by the decode step (its key sum z_t is not carried state)");
  const bool on_device = device_indices >= 0;
  if (on_device && !a.state_indices.empty())
    throw error("argument 'state_indices' is given twice: as a host span and on the device");
  const bool indexed = on_device || !a.state_indices.empty();
  const problem p = validate<Rule, Read>(a, state_pool_rows(a, indexed));
  if (indexed) {
    const index_t count = on_device ? device_indices : static_cast<index_t>(a.state_indices.size());
    if (count != p.B)
      throw error("argument 'state_indices' has " + std::to_string(count) +
                  " entries; expected one per batch row, B = " + std::to_string(p.B));
    if (a.initial_state.empty() && a.final_state.empty())
      throw error("argument 'state_indices' is given but no state pool (initial_state / final_state) is");
    if (on_device) return p;
    for (std::size_t b = 0; b < a.state_indices.size(); ++b) {
      const auto idx = a.state_indices[b];
      if (idx < -1 || idx >= p.N)
        throw error("argument 'state_indices[" + std::to_string(b) + "]' = " + std::to_string(idx) +
                    " is outside [-1, N) for a state pool of N = " + std::to_string(p.N) + " rows");
    }
    // Rows may share a state they only read; two rows writing one state back would race (rows run in
    // parallel) and have no sequential meaning.
    const bool writes_back = !a.final_state.empty() || !a.ccq.C.empty() || !a.ccq.m.empty() || !a.ccq.z.empty();
    if (writes_back) {
      std::vector<std::int32_t> sorted(a.state_indices.begin(), a.state_indices.end());
      std::sort(sorted.begin(), sorted.end());
      for (std::size_t b = 1; b < sorted.size(); ++b)
        if (sorted[b] >= 0 && sorted[b] == sorted[b - 1])
          throw error("argument 'state_indices' names state " + std::to_string(sorted[b]) +
                      " for more than one batch row while final_state (or CCQ statistics) is written; each "
                      "state takes at most one token per step");
    }
  }
  return p;
}

template <class Backend>
struct step_impl {
  static_assert(backend::always_false<Backend>, "linea::step: this backend has no decode step");
};

template <>
struct step_impl<backend::generic> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    const problem p = validate_step<Rule, Read>(a);
    recurrent_head<Rule, Read, T, S> head(p);
    for (index_t b = 0; b < p.B; ++b) {
      const index_t idx = a.state_indices.empty() ? b : a.state_indices[b];
      for (index_t hv = 0; hv < p.HV; ++hv) {
        if (idx < 0) {  // a padded row: nothing is read or written (core/epilogue.hpp)
          zero_skipped_row(a, p, b, hv);
          continue;
        }
        head.run(a, sequence{b, 0, 1}, hv, idx, idx);
      }
    }
  }
};

// The SIMD kernels (backend/cpu/recurrent.hpp), threads over (batch row, value head).
template <class Arch>
struct step_impl<backend::cpu_arch<Arch>> {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    const problem p = validate_step<Rule, Read>(a);
    cpu_backend::thread_count(a.threads, 1);
    cpu_backend::step<Rule, Read, cpu_backend::resolve_arch<Arch>>(a, p);
  }
};

}  // namespace detail

template <write_rule_policy Rule, read_policy Read = read::identity, backend::backend_tag Backend = backend::cpu, class T,
          class S>
void step(const arguments<T, S>& a) {
  detail::step_impl<Backend>::template run<Rule, Read>(a);
}

}  // namespace linea
