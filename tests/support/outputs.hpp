// tests/support/outputs.hpp — run a form into freshly allocated outputs (o, final state, residual).
//
//   auto r = run_into<linea::kda>(args);   // args' own output views are replaced by r's tensors
//   relative_error(r.o, other.o)
#pragma once
#include <linea/linea.hpp>
#include <linea/tensor.hpp>

namespace linea::testing {

template <class T, class S = accumulate_t<T>>
struct outputs {
  tensor<T, 4> o, residual;
  tensor<S, 4> final_state;
};

// Sentinel that every output is pre-filled with, so a test can tell written from untouched entries.
inline constexpr double sentinel = -12345.0;

// Allocates o, residual and final state for a's sizes (N = number of packed sequences, or B), filled with
// `sentinel`, points a at them, and runs Form<Rule, Read, Backend>.
template <class Rule, class Backend = backend::cpu, class Read = read::identity, class T, class S>
outputs<T, S> run_into(arguments<T, S> a) {
  const index_t B = a.q.extent(0), T_ = a.q.extent(1), HV = a.v.extent(2), K = a.q.extent(3), V = a.v.extent(3);
  const index_t N = a.cu_seqlens.empty() ? B : static_cast<index_t>(a.cu_seqlens.size()) - 1;
  outputs<T, S> r{tensor<T, 4>({B, T_, HV, V}, T(sentinel)), tensor<T, 4>({B, T_, HV, V}, T(sentinel)),
                  tensor<S, 4>({N, HV, K, V}, S(sentinel))};
  a.o = r.o, a.residual = r.residual, a.final_state = r.final_state;
  recurrent<Rule, Read, Backend>(a);
  return r;
}

}  // namespace linea::testing
