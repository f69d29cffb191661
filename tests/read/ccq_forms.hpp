// tests/read/ccq_forms.hpp — the forms a CCQ test runs, as types (so one test body covers every form).
#pragma once
#include <doctest/doctest.h>

#include <linea/linea.hpp>
#include <linea/forms/chunkwise.hpp>

#include "read/ccq_inputs.hpp"
#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/tolerance.hpp"

namespace linea::testing {

struct recurrent_form {
  static constexpr const char* name = "recurrent";
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    linea::recurrent<Rule, Read>(a);
  }
};

// The chunkwise form at a given chunk size (16 puts several chunk boundaries inside a short test sequence).
template <index_t ChunkSize>
struct chunkwise_form {
  static constexpr const char* name = "chunkwise";
  template <class Rule, class Read, class T, class S>
  static void run(arguments<T, S> a) {
    a.chunk_size = ChunkSize;
    linea::chunkwise<Rule, Read>(a);
  }
};

// Form (run<Rule, Read>) with a CCQ read against reference::recurrent on the same inputs in float64: o, the final
// state, the residual, q̃ and the final statistics C, m, z, within SPEC §5 for T.
template <class Rule, class Read, class Form, class T>
void check_ccq_against_reference(const case_shape& shape, const ccq_options& opt) {
  auto c = random_case<Rule, T>::make(shape);
  auto s = ccq_tensors<T>::make(c.shape, c.N, opt);
  auto ref = c.template cast<double>();
  auto sref = s.template cast<double>();
  auto a = c.args();
  s.attach(a);
  Form::template run<Rule, Read>(a);
  auto ar = ref.args();
  sref.attach(ar);
  reference::recurrent<Rule, Read>(ar);

  const double tol = tolerance_for<T>(c.shape.T);
  CHECK(relative_error(c.o, ref.o) <= tol);
  CHECK(relative_error(c.ht, ref.ht) <= tol);
  CHECK(relative_error(c.residual, ref.residual) <= tol);
  CHECK(relative_error(s.q_tilde, sref.q_tilde) <= tol);
  CHECK(relative_error(s.C, sref.C) <= tol);
  CHECK(relative_error(s.m, sref.m) <= tol);
  CHECK(relative_error(s.z, sref.z) <= tol);
  CHECK(all_finite(c.o));
}

}  // namespace linea::testing
