// tests/backend/cuda/sanitize_test.cu — one small run of every kernel (recurrent, step, chunk; both reads; 32- and
// 16-bit inputs) for compute-sanitizer: `compute-sanitizer --tool racecheck linea_cuda_tests -ts=sanitize`.
// Also a plain test: each run is checked against the float64 reference.
#include "backend/cuda/consistency.hpp"

namespace {
using namespace linea;
using namespace linea::testing;

template <class Rule>
void small_runs() {
  const case_shape s{.B = 1, .T = 70, .H = 1, .HV = 2, .K = 32, .V = 24, .initial_state = true, .seed = 21};
  const case_shape one{.B = 3, .T = 1, .H = 1, .HV = 2, .K = 32, .V = 24, .initial_state = true, .seed = 22};
  using D = read::ccq<read::decayed>;
  check_against_reference<Rule, read::identity, cuda_recurrent, float>(s);
  check_against_reference<Rule, read::identity, cuda_chunkwise, float>(s);
  check_against_reference<Rule, read::identity, cuda_chunkwise, bf16>(s);
  check_against_reference<Rule, D, cuda_recurrent, bf16>(s, {.initial_stats = true});
  check_against_reference<Rule, D, cuda_chunkwise, float>(s, {.initial_stats = true});
  check_against_reference<Rule, D, cuda_step, float>(one, {.initial_stats = true});
}
}  // namespace

TEST_SUITE("sanitize") {
  TEST_CASE("sanitize: additive") { small_runs<additive>(); }
  TEST_CASE("sanitize: gated_delta") { small_runs<gated_delta>(); }
  TEST_CASE("sanitize: gla") { small_runs<gla>(); }
  TEST_CASE("sanitize: kda") { small_runs<kda>(); }
  TEST_CASE("sanitize: gdn2") { small_runs<gdn2>(); }
}
