// tests/sanitize/cpu_kernels_test.cpp — the CPU kernels that index padded buffers, at reduced sizes, for the
// sanitizer build only (linea_tests_sanitized; tests/CMakeLists.txt keeps this directory out of linea_tests, whose
// full-size tests cover the same code).
//
// Odd K and V (padding lanes and row tails in every SIMD pass), sequences that cross the recurrent kernel's 64-token
// blocks and the chunk boundaries, grouped value heads, packed sequences, initial statistics: the backward
// (backend/cpu/backward*.hpp), the recurrent kernel with the CCQ read (backend/cpu/ccq.hpp), the chunkwise form
// with CCQ (read/ccq_chunk.hpp) and with a gate of exactly 0 (log decay −inf). Each is also checked against the
// float64 reference (SPEC §5 / §6), so a run that ASan and UBSan pass is also a correct one.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <linea/linea.hpp>
#include <linea/forms/backward.hpp>
#include <linea/forms/chunkwise.hpp>

#include "chunk/compare_forms.hpp"
#include "forms/backward_case.hpp"
#include "read/ccq_forms.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

// K = 19, V = 11: no vector width divides them. T = 70 crosses the recurrent kernel's 64-token block.
const case_shape odd{.B = 1, .T = 70, .H = 1, .HV = 2, .K = 19, .V = 11, .initial_state = true, .seed = 3};

template <class Rule, class Read>
void backward_matches_reference(const case_shape& shape, const backward_options& opt) {
  backward_case<Rule, Read, float> c(shape, opt);
  linea::backward<Rule, Read, backend::cpu>(c.args(), c.grads());
  c.check_against_reference();
}

}  // namespace

TEST_CASE("sanitize: the CPU backward at odd sizes matches the float64 reference") {
  SUBCASE("gated_delta, identity, two threads, chunk 8") {
    backward_matches_reference<gated_delta, read::identity>(odd, {.chunk_size = 8, .threads = 2});
  }
  SUBCASE("kda, ccq<decayed>, packed sequences") {
    case_shape packed = odd;
    packed.seqlens = {17, 0, 12};
    backward_matches_reference<kda, read::ccq<read::decayed>>(packed, {.chunk_size = 8});
  }
  SUBCASE("gla, identity, K = 1") {
    case_shape k1 = odd;
    k1.K = 1, k1.T = 9;
    backward_matches_reference<gla, read::identity>(k1, {.chunk_size = 4});
  }
}

TEST_CASE("sanitize: the recurrent CCQ kernel at odd sizes matches the float64 reference") {
  check_ccq_against_reference<gated_delta, read::ccq<read::decayed>, recurrent_form, float>(odd, {.initial_stats = true});
  check_ccq_against_reference<gla, read::ccq<read::uniform>, recurrent_form, float>(odd, {});
  case_shape step = odd;  // the decode step's path through the same kernel: one token per call
  step.T = 1;
  check_ccq_against_reference<gated_delta, read::ccq<read::decayed>, recurrent_form, float>(step, {.initial_stats = true});
}

TEST_CASE("sanitize: the chunkwise CCQ read at odd sizes matches the float64 reference") {
  check_ccq_against_reference<gated_delta, read::ccq<read::decayed>, chunkwise_form<16>, float>(odd, {.initial_stats = true});
}

TEST_CASE("sanitize: chunkwise and recurrent forms at odd sizes, and a gate of exactly 0") {
  const auto f = compare_forms<kda, float>(odd, 16);
  CHECK(f.chunkwise.worst() <= tolerance_for<float>(odd.T));
  CHECK(f.recurrent.worst() <= tolerance_for<float>(odd.T));
  CHECK(f.chunkwise.finite);

  // log decay −inf at one token: the state is erased there; nothing before it is poisoned.
  auto c = random_case<gated_delta, float>::make(odd);
  c.g(0, 33, 1) = -std::numeric_limits<float>::infinity();
  auto ref = c.template cast<double>();
  reference::recurrent<gated_delta>(ref.args());
  auto a = c.args();
  a.chunk_size = 16;
  chunkwise<gated_delta>(a);
  CHECK(relative_error(c.o, ref.o) <= tolerance_for<float>(odd.T));
  CHECK(all_finite(c.o));
}
