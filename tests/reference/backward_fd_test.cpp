// The float64 reference backward against central finite differences of the float64 forward (SPEC §6): every
// rule × read (identity, ccq<uniform>, ccq<decayed>) on a batch with initial state and on packed sequences with
// grouped value heads, then every option of the forward. Tolerance: fd_tolerance (finite_differences.hpp).
#include <doctest/doctest.h>

#include "reference/finite_differences.hpp"
#include "support/rules.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

// B = 2 with S_0 (and CCQ initial statistics, explicit c_t for the decayed weighting); then packed sequences
// {4, 0, 3} (one empty) with HV = 2·H, no S_0, default c_t.
template <class Rule, class Read>
void rule_and_read() {
  constexpr bool decayed = !Read::is_identity && requires { requires Read::weighting::decays; };
  {
    case_shape shape{.B = 2, .T = 5, .H = 2, .HV = 2, .K = 4, .V = 3, .initial_state = true, .seed = 11};
    fd_case<Rule, Read> c(shape, {.ccq = {.initial_stats = true, .explicit_log_decay = decayed}});
    INFO("batch, initial state");
    c.check();
  }
  {
    case_shape shape{.H = 1, .HV = 2, .K = 4, .V = 3, .seqlens = {4, 0, 3}, .seed = 12};
    fd_case<Rule, Read> c(shape, {});
    INFO("packed sequences, GVA");
    c.check();
  }
}

template <class Rule>
void every_read() {
  SUBCASE("identity") { rule_and_read<Rule, read::identity>(); }
  SUBCASE("ccq<uniform>") { rule_and_read<Rule, read::ccq<read::uniform>>(); }
  SUBCASE("ccq<decayed>") { rule_and_read<Rule, read::ccq<read::decayed>>(); }
}

const case_shape small{.B = 1, .T = 7, .H = 1, .HV = 2, .K = 4, .V = 3, .initial_state = true, .seed = 21};

}  // namespace

TEST_CASE_TEMPLATE("reference backward = finite differences, every read", Rule, LINEA_ALL_RULES) {
  every_read<Rule>();
}

TEST_CASE("reference backward = finite differences: in-kernel L2 norm of q and k") {
  fd_case<gated_delta, read::identity>(small, {.qk_l2norm = true}).check();
  fd_case<kda, read::ccq<read::decayed>>(small, {.qk_l2norm = true}).check();
  fd_case<gdn2, read::ccq<read::uniform>>(small, {.qk_l2norm = true}).check();
  fd_case<additive, read::identity>(small, {.qk_l2norm = true}).check();
}

TEST_CASE("reference backward = finite differences: in-kernel gates (A_log, dt_bias, lower bound)") {
  SUBCASE("scalar gate") {
    fd_case<gated_delta, read::identity>(small, {.gate = true}).check();
    fd_case<simple_gla, read::ccq<read::decayed>>(small, {.gate = true}).check();
    fd_case<gated_delta, read::identity>(small, {.gate = true, .dt_bias = false}).check();
    fd_case<gated_delta, read::identity>(small, {.gate = true, .lower_bound = true}).check();
  }
  SUBCASE("per-key gate") {
    fd_case<kda, read::identity>(small, {.gate = true}).check();
    fd_case<kda, read::identity>(small, {.gate = true, .lower_bound = true}).check();
    fd_case<gla, read::ccq<read::decayed>>(small, {.gate = true, .lower_bound = true}).check();
    fd_case<gdn2, read::identity>(small, {.gate = true, .dt_bias = false}).check();
  }
}

TEST_CASE("reference backward = finite differences: beta activation") {
  fd_case<delta, read::identity>(small, {.beta_act = beta_activation::sigmoid}).check();
  fd_case<gated_delta, read::ccq<read::uniform>>(small, {.beta_act = beta_activation::two_sigmoid}).check();
  fd_case<kda, read::identity>(small, {.beta_act = beta_activation::two_sigmoid}).check();
}

TEST_CASE("reference backward = finite differences: normalize (additive)") {
  fd_case<additive, read::identity>(small, {.normalize = true}).check();
  fd_case<additive, read::ccq<read::uniform>>(small, {.normalize = true}).check();
  case_shape packed{.H = 1, .HV = 2, .K = 4, .V = 3, .seqlens = {3, 4}, .seed = 5};
  fd_case<additive, read::identity>(packed, {.normalize = true}).check();
}

TEST_CASE("reference backward = finite differences: g_gamma (a stride-0 gate)") {
  case_shape batch{.B = 2, .T = 5, .H = 1, .HV = 2, .K = 4, .V = 3, .initial_state = true, .seed = 3};
  fd_case<simple_gla, read::identity>(batch, {.g_gamma = true}).check();
  fd_case<gated_delta, read::ccq<read::decayed>>(batch, {.g_gamma = true}).check();
}

TEST_CASE("reference backward = finite differences: scale, head-first strides, beta up to 2") {
  case_shape hf{.B = 2, .T = 6, .H = 2, .HV = 4, .K = 3, .V = 5, .initial_state = true, .head_first = true,
                .beta_max = 2, .seed = 8};
  fd_case<gated_delta, read::identity>(hf, {}).check();
  fd_case<gdn2, read::ccq<read::decayed>>(hf, {}).check();
}
