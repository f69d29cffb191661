// tests/chunk/compare_forms.hpp — runs one random case through the chunkwise form, the recurrent form and the
// float64 reference, and measures both forms against the reference (SPEC §5).
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/tolerance.hpp"

namespace linea::testing {

struct form_errors {
  double o = 0, state = 0, residual = 0;  // ‖x − ref‖ / ‖ref‖ of the outputs, final state, write residual
  bool finite = true;
  double worst() const { return std::max({o, state, residual}); }
  void merge(const form_errors& e) {
    o = std::max(o, e.o), state = std::max(state, e.state), residual = std::max(residual, e.residual);
    finite = finite && e.finite;
  }
};

struct forms_compared {
  form_errors chunkwise, recurrent;
};

// Packed sequences around a case length T: T itself, one just over a chunk, and one of a single token.
inline std::vector<std::int64_t> packed_lengths(index_t T, index_t C) { return {T, C + 1, 1}; }

template <class Rule, class T>
forms_compared compare_forms(const case_shape& shape, index_t C, bool run_recurrent = true) {
  auto c = random_case<Rule, T>::make(shape);
  auto ref = c.template cast<double>();
  reference::recurrent<Rule>(ref.args());

  auto measure = [&](auto& x) {
    form_errors e;
    e.o = relative_error(x.o, ref.o);
    e.state = relative_error(x.ht, ref.ht);
    e.residual = relative_error(x.residual, ref.residual);
    e.finite = all_finite(x.o) && all_finite(x.ht) && all_finite(x.residual);
    return e;
  };
  forms_compared r;
  if (run_recurrent) {
    auto rec = c;
    recurrent<Rule>(rec.args());
    r.recurrent = measure(rec);
  }
  auto a = c.args();
  a.chunk_size = C;
  chunkwise<Rule>(a);
  r.chunkwise = measure(c);
  return r;
}

}  // namespace linea::testing
