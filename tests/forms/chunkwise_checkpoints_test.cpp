// Checkpoints: the chunkwise form's state at the start of every chunk equals the reference state after the
// same prefix of the sequence (the float64 reference run on tokens [t_begin, t_begin + c·C) from the same S_0).
#include <cmath>
#include <limits>

#include <doctest/doctest.h>

#include "support/rules.hpp"
#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/tolerance.hpp"
#include "support/slice.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

// The arguments of the first `len` tokens of sequence n alone: one batch row, no cu_seqlens, its own S_0.
template <class A>
A prefix_of_sequence(A a, const problem& p, index_t n, index_t len) {
  const sequence seq = sequence_of(a, p, n);
  a.cu_seqlens = {};
  a = time_slice_args(a, seq.t_begin, seq.t_begin + len);
  auto rows = [&](auto& x) { x = row_slice(x, seq.batch, seq.batch + 1); };
  rows(a.q), rows(a.k), rows(a.v), rows(a.g), rows(a.gk), rows(a.beta), rows(a.b), rows(a.w), rows(a.o),
      rows(a.residual);
  a.initial_state = row_slice(a.initial_state, n, n + 1);
  return a;
}

template <class Rule, class T>
void check_checkpoints(const case_shape& shape, index_t C) {
  using S = accumulate_t<T>;
  auto c = random_case<Rule, T>::make(shape);
  auto a = c.args();
  a.chunk_size = C;
  const problem p = validate<Rule, read::identity>(a);
  const index_t M = max_chunks(a, p);
  tensor<S, 5> cp({p.N, M, p.HV, p.K, p.V}, std::numeric_limits<S>::quiet_NaN());  // NaN: not written
  a.checkpoints = cp;
  chunkwise<Rule>(a);

  auto ref = c.template cast<double>();
  for (index_t n = 0; n < p.N; ++n) {
    const index_t chunks = chunk::chunk_count(sequence_of(a, p, n), C);
    for (index_t ci = 0; ci < M; ++ci) {
      INFO(std::string(rule_name<Rule>::value), " chunk_size=", C, " ", describe_shape(c.shape), " sequence ", n, " chunk ", ci);
      const std::size_t block = static_cast<std::size_t>(p.HV * p.K * p.V);
      const S* got = &cp(n, ci, 0, 0, 0);
      if (ci >= chunks) {  // beyond this sequence's chunks: left as it was
        CHECK(std::isnan(got[0]));
        continue;
      }
      tensor<double, 4> state({1, p.HV, p.K, p.V});
      auto r = prefix_of_sequence(ref.args(), p, n, ci * C);
      r.final_state = state;
      reference::recurrent<Rule>(r);
      CHECK(relative_error(got, state.data(), block) <= tolerance_for<T>(shape.T));
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("chunkwise checkpoints are the states at chunk starts", Rule, LINEA_ALL_RULES) {
  for (index_t C : {16, 64}) {
    check_checkpoints<Rule, double>({.B = 2, .T = 2 * C + 5, .H = 1, .HV = 2, .K = 8, .V = 8, .initial_state = true}, C);
    check_checkpoints<Rule, float>({.B = 2, .T = 2 * C, .H = 1, .HV = 2, .K = 8, .V = 8}, C);
    // Packed: 3, 1 and 1 chunks (the last sequence's entries 1 and 2 stay unwritten).
    check_checkpoints<Rule, double>(
        {.H = 1, .HV = 2, .K = 8, .V = 8, .seqlens = {2 * C + 1, C, 1}, .initial_state = true}, C);
  }
}
