// linea/segments/segmented.hpp — the segmented chunkwise form on the host backends, with the piece length given:
//
//   linea::segmented_chunkwise<linea::gated_delta>(args, 1024);   // sequences > 1024 tokens cut into pieces
//
// Same arguments and results (within SPEC §5) as linea::chunkwise; plan.hpp has the algorithm. The CUDA backend
// cuts on its own when a call cannot fill the GPU (cuda::launch::segment_tokens, backend/cuda/segments.hpp); on the
// host this entry exists to test the combine, and as the single-process model of context parallelism.
// Calls the segmented forward cannot run (segments::applies: CCQ, normalize, checkpoints, o = v, unpackable
// strides) run the plain chunkwise form.
#pragma once
#include "../forms/chunkwise.hpp"
#include "forward.hpp"

namespace linea {

template <write_rule_policy Rule, read_policy Read = read::identity, backend::backend_tag Backend = backend::cpu, class T,
          class S>
void segmented_chunkwise(const arguments<T, S>& a, index_t piece) {
  const problem p = validate_chunkwise<Rule, Read>(a);
  if (piece < 0) throw error("argument 'piece' of segmented_chunkwise = " + std::to_string(piece) + " must be >= 0");
  if (detail::forward_writes_nothing(a, p)) return;  // no tokens, no states asked for (core/empty_call.hpp)
  const segments::plan plan =
      piece > 0 && segments::applies<Read>(a) ? segments::make_plan(segments::sequence_starts(a, p), piece) : segments::plan{};
  if (!plan.cuts()) return linea::chunkwise<Rule, Read, Backend>(a);
  segments::host_ops<Backend> ops(a.threads);
  segments::forward<Rule>(ops, a, p, plan);
}

}  // namespace linea
