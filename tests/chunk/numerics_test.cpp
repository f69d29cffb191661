// Numerical safety of the chunkwise form (SPEC §4–5): extreme gates (log decays uniform in [−20, 0]) and β up to 2
// give finite results within tolerance; in-kernel options (L2 norm, beta and gate activations, the additive
// normaliser) match the reference; T = 65536 in float32 stays within 1e-4 (slow).
#include <cmath>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "support/rules.hpp"
#include "chunk/compare_forms.hpp"

using namespace linea;
using namespace linea::testing;

TEST_CASE_TEMPLATE("chunkwise with extreme gates and beta up to 2 is finite and within tolerance", Rule, LINEA_ALL_RULES) {
  std::uint32_t seed = 77;
  for (index_t C : {16, 32, 64, 128}) {
    const case_shape s{.B = 1, .T = 300, .H = 1, .HV = 2, .K = 32, .V = 16, .initial_state = true,
                       .gates = gate_range::extreme, .beta_max = 2, .seed = seed++};
    INFO(std::string(rule_name<Rule>::value), " chunk_size=", C, " ", describe_shape(s));
    const auto f = compare_forms<Rule, float>(s, C, false);
    CHECK(f.chunkwise.finite);
    CHECK(f.chunkwise.worst() <= tolerance_for<float>(s.T));
    const auto d = compare_forms<Rule, double>(s, C, false);
    CHECK(d.chunkwise.finite);
    CHECK(d.chunkwise.worst() <= tolerance_for<double>());
  }
}

namespace {

// One case with options set on the arguments, chunkwise (float32) against the reference.
// positive_qk: |q|, |k| (feature-mapped queries and keys), so that the normaliser's denominator s·q·z stays away
// from zero; with signed random q it crosses zero and both forms lose the same digits to cancellation.
template <class Rule, class Setup>
void check_options(const case_shape& shape, Setup setup, bool positive_qk = false) {
  auto c = random_case<Rule, float>::make(shape);
  if (positive_qk)
    for (auto* x : {&c.q, &c.k})
      for (float& e : x->values()) e = std::abs(e);
  auto ref = c.template cast<double>();
  auto a = c.args();
  auto r = ref.args();
  setup(a), setup(r);
  reference::recurrent<Rule>(r);
  for (index_t C : {16, 64}) {
    a.chunk_size = C;
    chunkwise<Rule>(a);
    INFO(std::string(rule_name<Rule>::value), " chunk_size=", C, " ", describe_shape(shape));
    CHECK(all_finite(c.o));
    CHECK(relative_error(c.o, ref.o) <= tolerance_for<float>(shape.T));
    CHECK(relative_error(c.ht, ref.ht) <= tolerance_for<float>(shape.T));
    CHECK(relative_error(c.residual, ref.residual) <= tolerance_for<float>(shape.T));
  }
}

}  // namespace

TEST_CASE("chunkwise in-kernel options match the reference") {
  const case_shape s{.B = 2, .T = 100, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true};
  std::vector<float> A_log{-0.5f, 0.0f, 0.3f, -1.0f}, dt_bias(4 * 16);
  for (std::size_t i = 0; i < dt_bias.size(); ++i) dt_bias[i] = 0.05f * float(i % 7) - 0.1f;
  const auto A = contiguous<1>(static_cast<const float*>(A_log.data()), {4});
  const auto bias_hv = contiguous<1>(static_cast<const float*>(dt_bias.data()), {4});
  const auto bias_hvk = contiguous<1>(static_cast<const float*>(dt_bias.data()), {4 * 16});
  SUBCASE("additive with the normaliser") {
    check_options<additive>(s, [](auto& a) { a.normalize = true; }, /*positive_qk=*/true);
  }
  SUBCASE("gated delta: q/k L2 norm, beta = sigmoid(x), g = -exp(A_log) softplus(x + dt_bias)") {
    check_options<gated_delta>(s, [&](auto& a) {
      a.qk_l2norm = true, a.beta_act = beta_activation::sigmoid;
      a.gate.A_log = A, a.gate.dt_bias = bias_hv;
    });
  }
  SUBCASE("kda: beta = 2 sigmoid(x), gk = lower_bound sigmoid(exp(A_log)(x + dt_bias))") {
    check_options<kda>(s, [&](auto& a) {
      a.qk_l2norm = true, a.beta_act = beta_activation::two_sigmoid;
      a.gate.A_log = A, a.gate.dt_bias = bias_hvk, a.gate.lower_bound = -5.0f;
    });
  }
  SUBCASE("gla with a custom scale") {
    check_options<gla>(s, [](auto& a) { a.scale = 0.37; });
  }
}

TEST_SUITE("slow") {
  TEST_CASE_TEMPLATE("chunkwise at T = 65536 in float32 stays within 1e-4 of the float64 reference", Rule, gla, kda,
                     gated_delta) {
    for (index_t C : {16, 64, 128}) {
      const case_shape s{.B = 1, .T = 65536, .H = 1, .HV = 2, .K = 32, .V = 32, .initial_state = true,
                         .seed = static_cast<std::uint32_t>(C)};
      INFO(std::string(rule_name<Rule>::value), " chunk_size=", C, " ", describe_shape(s));
      const auto f = compare_forms<Rule, float>(s, C, false);
      CHECK(f.chunkwise.finite);
      CHECK(f.chunkwise.worst() <= tolerance_for<float>(s.T));
    }
  }
}
