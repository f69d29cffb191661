// CCQ in every form against the float64 reference (SPEC §5): every rule × weighting × varlen × GVA × initial
// statistics (× explicit log decay for the decayed weighting), checking o, the final state, the residual, q̃ and
// the final statistics C, m, z.
#include <doctest/doctest.h>

#include "support/rules.hpp"
#include "read/ccq_forms.hpp"
#include "read/ccq_inputs.hpp"
#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

template <class Rule, class Form>
void grid() {
  for (bool varlen : {false, true})
    for (bool gva : {false, true})
      for (bool initial : {false, true}) {
        case_shape shape{.B = 2, .T = 65, .H = 2, .HV = gva ? 4 : 2, .K = 32, .V = 16, .initial_state = initial};
        if (varlen) shape.seqlens = {5, 64, 40};
        CAPTURE(varlen);
        CAPTURE(gva);
        CAPTURE(initial);
        check_ccq_against_reference<Rule, read::ccq<read::uniform>, Form, float>(shape, {.initial_stats = initial});
        check_ccq_against_reference<Rule, read::ccq<read::decayed>, Form, float>(shape, {.initial_stats = initial});
        check_ccq_against_reference<Rule, read::ccq<read::decayed>, Form, float>(
            shape, {.initial_stats = initial, .explicit_log_decay = true});
      }
}

}  // namespace

TEST_CASE_TEMPLATE("ccq: recurrent matches the float64 reference", Rule, LINEA_ALL_RULES) {
  grid<Rule, recurrent_form>();
}

TEST_CASE_TEMPLATE("ccq: chunkwise (chunk size 16) matches the float64 reference", Rule, LINEA_ALL_RULES) {
  grid<Rule, chunkwise_form<16>>();
}

TEST_CASE_TEMPLATE("ccq: chunkwise (chunk size 64) matches the float64 reference", Rule, LINEA_ALL_RULES) {
  grid<Rule, chunkwise_form<64>>();
}

TEST_CASE_TEMPLATE("ccq: float64 inputs through the recurrent form match the reference to 1e-12", Rule, gla,
                   gated_delta, gdn2) {
  case_shape shape{.B = 1, .T = 70, .H = 2, .HV = 4, .K = 32, .V = 16, .seqlens = {30, 40}, .initial_state = true};
  check_ccq_against_reference<Rule, read::ccq<read::decayed>, recurrent_form, double>(shape, {.initial_stats = true});
  check_ccq_against_reference<Rule, read::ccq<read::uniform>, recurrent_form, double>(shape, {.initial_stats = true});
  check_ccq_against_reference<Rule, read::ccq<read::decayed>, chunkwise_form<16>, double>(shape, {.initial_stats = true});
  check_ccq_against_reference<Rule, read::ccq<read::uniform>, chunkwise_form<32>, double>(shape, {.initial_stats = true});
}

// A caller's z0 = −1 (−2) cancels the count: z_1 = 0 (z_2 = 0, at a recurrent-block or chunk position other than
// the first). The read takes Σ_t = 0 there (q̃_t = q_t, read/ccq_statistics.hpp), as the reference does; the CPU
// forms divided by z and turned q̃, o and every later state into NaN before.
TEST_CASE("ccq: a vanishing normaliser (z_t = 0) reads Sigma_t = 0 in every form") {
  const case_shape shape{.B = 2, .T = 40, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true, .seed = 21};
  for (double z0 : {-1.0, -2.0}) {
    CAPTURE(z0);
    const ccq_options opt{.initial_stats = true, .z0 = z0};
    check_ccq_against_reference<gated_delta, read::ccq<read::uniform>, recurrent_form, float>(shape, opt);
    check_ccq_against_reference<gated_delta, read::ccq<read::uniform>, chunkwise_form<16>, float>(shape, opt);
    check_ccq_against_reference<kda, read::ccq<read::uniform>, recurrent_form, double>(shape, opt);
    check_ccq_against_reference<kda, read::ccq<read::uniform>, chunkwise_form<16>, double>(shape, opt);
  }
}

TEST_CASE("ccq: head-first strided inputs give the same result") {
  case_shape shape{.B = 2, .T = 40, .H = 2, .HV = 4, .K = 32, .V = 16, .head_first = true};
  check_ccq_against_reference<gated_delta, read::ccq<read::decayed>, recurrent_form, float>(shape, {});
  check_ccq_against_reference<kda, read::ccq<read::decayed>, chunkwise_form<16>, float>(shape, {});
}

TEST_CASE("ccq: extreme log decays (down to -20 per step) stay accurate and finite") {
  case_shape shape{.B = 1, .T = 150, .H = 2, .HV = 2, .K = 32, .V = 16, .initial_state = true,
                   .gates = gate_range::extreme};
  check_ccq_against_reference<gdn2, read::ccq<read::decayed>, recurrent_form, float>(shape, {.initial_stats = true});
  check_ccq_against_reference<gdn2, read::ccq<read::decayed>, chunkwise_form<64>, float>(shape, {.initial_stats = true});
  check_ccq_against_reference<simple_gla, read::ccq<read::decayed>, chunkwise_form<32>, float>(shape, {});
}

// The CPU recurrent kernel keeps the symmetric part of C in 16×16 blocks on and above the diagonal, 16 tokens
// per sub-block (cut at renormalisations), with a loop specialised for K = 128 and a non-symmetric C0's
// antisymmetric part apart (backend/cpu/ccq.hpp): K = 128 and K = 40 (partial blocks), skewed C0, ordinary and
// extreme decays (renormalisations every few tokens).
TEST_CASE_TEMPLATE("ccq: recurrent at K = 128 and K = 40 with a non-symmetric C0 matches the float64 reference", Rule,
                   simple_gla, gla, gated_delta) {
  for (index_t K : {128, 40})
    for (gate_range gates : {gate_range::normal, gate_range::extreme}) {
      case_shape shape{.B = 1, .T = 75, .H = 1, .HV = 2, .K = K, .V = 16, .initial_state = true, .gates = gates};
      CAPTURE(K);
      const ccq_options opt{.initial_stats = true, .skewed_C0 = true};
      check_ccq_against_reference<Rule, read::ccq<read::decayed>, recurrent_form, float>(shape, opt);
      check_ccq_against_reference<Rule, read::ccq<read::uniform>, recurrent_form, float>(shape, opt);
    }
}
