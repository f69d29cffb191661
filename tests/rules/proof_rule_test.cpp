// tests/rules/proof_rule_test.cpp — the test-only rule (tests/support/rules.hpp: scalar decay with GDN-2's erase and
// write gates), which no backend was written for, through every form × host backend × read against the float64
// reference. The CUDA side of the same check is tests/backend/cuda/scalar_delta2_test.cu.
#include <doctest/doctest.h>

#include "read/ccq_forms.hpp"
#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/rules.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

using proof_rule = linea::testing::scalar_delta2;

template <class Backend>
struct recurrent_on {
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) { linea::recurrent<Rule, Read, Backend>(a); }
};
template <class Backend>
struct chunkwise_on {
  template <class Rule, class Read, class T, class S>
  static void run(arguments<T, S> a) {
    a.chunk_size = 16;  // several chunk boundaries in the sequence
    linea::chunkwise<Rule, Read, Backend>(a);
  }
};
template <class Backend>
struct step_on {  // T = 1: row b advances state b by its one token, as the recurrent form would
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) { linea::step<Rule, Read, Backend>(a); }
};

// The form on Backend with read Read, against reference::recurrent on the same inputs in float64 (CCQ reads:
// read/ccq_forms.hpp's check, which adds q̃ and the final statistics).
template <class Form, class Read>
void check(const case_shape& shape) {
  if constexpr (!Read::is_identity) {
    check_ccq_against_reference<proof_rule, Read, Form, float>(shape, {.initial_stats = true});
  } else {
    auto c = random_case<proof_rule, float>::make(shape);
    auto ref = c.template cast<double>();
    Form::template run<proof_rule, Read>(c.args());
    reference::recurrent<proof_rule, Read>(ref.args());
    const double tol = tolerance_for<float>(shape.T);
    CHECK(relative_error(c.o, ref.o) <= tol);
    CHECK(relative_error(c.ht, ref.ht) <= tol);
    CHECK(relative_error(c.residual, ref.residual) <= tol);
    CHECK(all_finite(c.o));
  }
}

template <class Form>
void every_read(const case_shape& shape) {
  SUBCASE("identity") { check<Form, read::identity>(shape); }
  SUBCASE("ccq<uniform>") { check<Form, read::ccq<read::uniform>>(shape); }
  SUBCASE("ccq<decayed>") { check<Form, read::ccq<read::decayed>>(shape); }
}

const case_shape sequence_shape{.B = 2, .T = 45, .H = 2, .HV = 4, .K = 32, .V = 24, .initial_state = true, .seed = 3};
const case_shape decode_shape{.B = 3, .T = 1, .H = 2, .HV = 4, .K = 32, .V = 24, .initial_state = true, .seed = 4};

}  // namespace

TEST_CASE("test-only rule scalar_delta2: recurrent form on cpu and generic, every read") {
  SUBCASE("cpu") { every_read<recurrent_on<backend::cpu>>(sequence_shape); }
  SUBCASE("generic") { every_read<recurrent_on<backend::generic>>(sequence_shape); }
  SUBCASE("reference") { every_read<recurrent_on<backend::reference>>(sequence_shape); }
}

TEST_CASE("test-only rule scalar_delta2: chunkwise form on cpu and generic, every read") {
  SUBCASE("cpu") { every_read<chunkwise_on<backend::cpu>>(sequence_shape); }
  SUBCASE("generic") { every_read<chunkwise_on<backend::generic>>(sequence_shape); }
}

TEST_CASE("test-only rule scalar_delta2: decode step on cpu and generic, every read") {
  SUBCASE("cpu") { every_read<step_on<backend::cpu>>(decode_shape); }
  SUBCASE("generic") { every_read<step_on<backend::generic>>(decode_shape); }
}
