// Options of SPEC §1, each checked against the float64 reference fed with inputs that the test itself has
// transformed the same way (so the option's logic is checked independently of the library's code):
// qk_l2norm, beta_act (sigmoid, 2·sigmoid), in-kernel gates (scalar and per key, dt_bias, lower_bound),
// g_gamma as a stride-0 g view, normalize for the additive rule, scale; and T = 0 as a no-op.
// Every option runs on backend::cpu, backend::generic and backend::reference.
#include <cmath>
#include <vector>

#include <doctest/doctest.h>

#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/outputs.hpp"
#include "support/rules.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

// o, residual and final state of `got` against the float64 truth `want`.
template <class T, class S>
void check_against(const outputs<T, S>& got, const outputs<double>& want, index_t T_len) {
  const double tol = tolerance_for<T>(T_len);
  CHECK(relative_error(got.o, want.o) <= tol);
  CHECK(relative_error(got.residual, want.residual) <= tol);
  CHECK(relative_error(got.final_state, want.final_state) <= tol);
}

double sigmoid_d(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double softplus_d(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }  // fla's threshold (SPEC §1)

const case_shape option_shape{.B = 2, .T = 50, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true};

}  // namespace

// ---- qk_l2norm ---------------------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("option qk_l2norm: equals the reference on L2-normalised q and k", Rule, LINEA_ALL_RULES) {
  auto c = random_case<Rule, float>::make(option_shape);
  // Raw keys and queries of varied norms.
  for (std::size_t i = 0; i < c.k.size(); ++i) c.k.data()[i] *= float(0.25 + 0.5 * double(i % 9));
  for (std::size_t i = 0; i < c.q.size(); ++i) c.q.data()[i] *= float(0.1 + 0.3 * double(i % 5));
  auto truth = c.template cast<double>();
  for (auto* x : {&truth.q, &truth.k})  // x̂ = x / sqrt(Σx² + 1e-6) per row of K
    for (std::size_t r = 0; r < x->size(); r += 16) {
      double ss = 0;
      for (int i = 0; i < 16; ++i) ss += x->data()[r + i] * x->data()[r + i];
      for (int i = 0; i < 16; ++i) x->data()[r + i] /= std::sqrt(ss + 1e-6);
    }
  const auto want = run_into<Rule, backend::reference>(truth.args());
  {  // the raw inputs without the option give something else: the option is not a no-op here
    const auto raw = run_into<Rule, backend::reference>(c.template cast<double>().args());
    CHECK(relative_error(raw.o, want.o) > 1e-2);
  }
  for_each_backend([&]<class Backend>() {
    auto a = c.args();
    a.qk_l2norm = true;
    check_against(run_into<Rule, Backend>(a), want, option_shape.T);
  });
}

// ---- beta activation ---------------------------------------------------------------------------------------

// A finite row whose Σ x² overflows float32 (an entry past ~1.8e19) normalises to its unit vector, as in float64:
// it used to become x / inf = 0 (o = 0 where the reference gives 1).
TEST_CASE("option qk_l2norm: rows whose sum of squares overflows float32 still normalise") {
  for (float big : {1e20f, -3e38f}) {
    const float q[2] = {1, 0}, k[2] = {big, 0}, v[1] = {2};
    float o[3] = {0, 0, 0};
    arguments<float> a;
    a.q = contiguous<4>(q, {1, 1, 1, 2}), a.k = contiguous<4>(k, {1, 1, 1, 2}), a.v = contiguous<4>(v, {1, 1, 1, 1});
    a.scale = 1.0, a.qk_l2norm = true;
    a.o = contiguous<4>(&o[0], {1, 1, 1, 1});
    recurrent<additive>(a);
    a.o = contiguous<4>(&o[1], {1, 1, 1, 1});
    chunkwise<additive>(a);
    a.o = contiguous<4>(&o[2], {1, 1, 1, 1});
    recurrent<additive, read::identity, backend::generic>(a);
    const float expected = big > 0 ? 2.f : -2.f;  // q̂·k̂ = ±1, times v
    INFO("k = (", big, ", 0)");
    for (float x : o) CHECK(x == doctest::Approx(expected).epsilon(1e-5));
  }
}

TEST_CASE_TEMPLATE_DEFINE("option beta_act: sigmoid and two_sigmoid equal the reference on σ(x) and 2σ(x)", Rule,
                          beta_act_test) {
  auto c = random_case<Rule, double>::make(option_shape);
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0.0, 2.0);
  for (auto& x : c.beta.values()) x = normal(rng);  // logits
  for (auto act : {beta_activation::sigmoid, beta_activation::two_sigmoid}) {
    CAPTURE(static_cast<int>(act));
    auto truth = c.template cast<double>();
    const double m = act == beta_activation::sigmoid ? 1.0 : 2.0;
    for (auto& x : truth.beta.values()) x = m * sigmoid_d(x);
    const auto want = run_into<Rule, backend::reference>(truth.args());
    for_each_backend([&]<class Backend>() {
      auto a = c.args();
      a.beta_act = act;
      check_against(run_into<Rule, Backend>(a), want, option_shape.T);
    });
  }
}

TEST_CASE_TEMPLATE_APPLY(beta_act_test, linea::testing::rules_reading<input::beta>);

// ---- in-kernel gates ---------------------------------------------------------------------------------------

TEST_CASE_TEMPLATE_DEFINE("option gate (A_log, dt_bias, lower_bound): equals the reference on the activated gates", Rule,
                          gate_test) {
  const index_t HV = option_shape.HV, K = option_shape.K;
  auto c = random_case<Rule, float>::make(option_shape);
  std::mt19937 rng(9);
  std::normal_distribution<double> normal(0.0, 3.0);
  auto& logits = [&]() -> auto& {
    if constexpr (linea::reads(Rule::inputs, linea::input::gk)) return c.gk.values();
    else return c.g.values();
  }();
  for (std::size_t i = 0; i < logits.size(); ++i)  // a few logits above softplus's threshold of 20
    logits[i] = float(i % 17 == 0 ? 25.0 + normal(rng) : normal(rng));

  std::vector<float> A_log(static_cast<std::size_t>(HV)), dt_bias(static_cast<std::size_t>(linea::reads(Rule::inputs, linea::input::gk) ? HV * K : HV));
  for (auto& x : A_log) x = float(0.5 * normal(rng) / 3.0);
  for (auto& x : dt_bias) x = float(normal(rng) / 3.0);

  for (bool with_bias : {false, true})
    for (bool bounded : {false, true}) {
      CAPTURE(with_bias);
      CAPTURE(bounded);
      const double lb = -5.0;
      auto truth = c.template cast<double>();
      // g at (hv, i) from its logit x, computed here from SPEC §1.
      auto gate = [&](double x, index_t hv, index_t i) {
        const double bias = with_bias ? double(dt_bias[static_cast<std::size_t>(linea::reads(Rule::inputs, linea::input::gk) ? hv * K + i : hv)]) : 0.0;
        const double A = double(A_log[static_cast<std::size_t>(hv)]);
        return bounded ? lb * sigmoid_d(std::exp(A) * (x + bias)) : -std::exp(A) * softplus_d(x + bias);
      };
      auto args_t = truth.args();
      for (index_t b = 0; b < option_shape.B; ++b)
        for (index_t t = 0; t < option_shape.T; ++t)
          for (index_t hv = 0; hv < HV; ++hv) {
            if constexpr (linea::reads(Rule::inputs, linea::input::gk)) {
              for (index_t i = 0; i < K; ++i) truth.gk(b, t, hv, i) = gate(args_t.gk(b, t, hv, i), hv, i);
            } else {
              truth.g(b, t, hv) = gate(args_t.g(b, t, hv), hv, 0);
            }
          }
      const auto want = run_into<Rule, backend::reference>(truth.args());
      for_each_backend([&]<class Backend>() {
        auto a = c.args();
        a.gate.A_log = contiguous<1>(static_cast<const float*>(A_log.data()), {HV});
        if (with_bias) a.gate.dt_bias = contiguous<1>(static_cast<const float*>(dt_bias.data()), {index_t(dt_bias.size())});
        if (bounded) a.gate.lower_bound = float(lb);
        check_against(run_into<Rule, Backend>(a), want, option_shape.T);
      });
    }
}

TEST_CASE_TEMPLATE_APPLY(gate_test, linea::testing::rules_reading<input::g | input::gk>);

// ---- g_gamma -----------------------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("option g_gamma: a stride-0 g view equals the same decay written out per token", Rule, simple_gla,
                   gated_delta) {
  for (bool packed : {false, true}) {
    CAPTURE(packed);
    case_shape s = option_shape;
    if (packed) s.seqlens = {17, 1, 32};
    auto c = random_case<Rule, float>::make(s);
    const index_t B = c.shape.B, T = c.shape.T, HV = c.shape.HV;
    const std::vector<float> gamma = {-0.05f, -0.5f, -1.0f, -3.0f};
    for (index_t b = 0; b < B; ++b)  // the explicit per-token copy, for the reference
      for (index_t t = 0; t < T; ++t)
        for (index_t hv = 0; hv < HV; ++hv) c.g(b, t, hv) = gamma[static_cast<std::size_t>(hv)];
    const auto want = run_into<Rule, backend::reference>(c.template cast<double>().args());
    for_each_backend([&]<class Backend>() {
      auto a = c.args();
      a.g = strided<3>(gamma.data(), {B, T, HV}, {0, 0, 1});
      check_against(run_into<Rule, Backend>(a), want, T);
    });
  }
}

// ---- normalize (additive) ----------------------------------------------------------------------------------

TEST_CASE("option normalize (additive): o_t / (s·q_t·z_t + 1e-10), z_t = Σ k_j from zero per sequence") {
  for (bool packed : {false, true}) {
    CAPTURE(packed);
    case_shape s{.B = 2, .T = 40, .H = 2, .HV = 4, .K = 16, .V = 8};
    if (packed) s.seqlens = {1, 25, 14};
    auto c = random_case<additive, float>::make(s);
    // Positive feature maps (as linear attention uses), so that q·z stays away from zero.
    for (auto& x : c.q.values()) x = std::fabs(x) + 0.1f;
    for (auto& x : c.k.values()) x = std::fabs(x) + 0.1f;
    auto truth = c.cast<double>();
    auto want = run_into<additive, backend::reference>(truth.args());  // unnormalised
    const auto targs = truth.args();
    const index_t K = s.K, V = s.V, HV = s.HV, G = HV / s.H;
    const double scale = 1.0 / std::sqrt(double(K));
    for (index_t n = 0; n < c.N; ++n) {
      const index_t bt = packed ? 0 : n;
      const index_t t0 = packed ? c.cu_seqlens[n] : 0, t1 = packed ? c.cu_seqlens[n + 1] : s.T;
      for (index_t hv = 0; hv < HV; ++hv) {
        std::vector<double> z(static_cast<std::size_t>(K), 0.0);
        for (index_t t = t0; t < t1; ++t) {
          double qz = 0;
          for (index_t i = 0; i < K; ++i) {
            z[i] += targs.k(bt, t, hv / G, i);
            qz += scale * targs.q(bt, t, hv / G, i) * z[i];
          }
          for (index_t j = 0; j < V; ++j) want.o(bt, t, hv, j) /= qz + 1e-10;
        }
      }
    }
    for_each_backend([&]<class Backend>() {
      auto a = c.args();
      a.normalize = true;
      check_against(run_into<additive, Backend>(a), want, s.T);
    });
  }
}

// ---- scale -------------------------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("option scale: multiplies the query at read time only (the state does not see it)", Rule,
                   LINEA_ALL_RULES) {
  auto c = random_case<Rule, float>::make(option_shape);
  const double s = 0.3;
  auto truth = c.template cast<double>();
  for (auto& x : truth.q.values()) x *= s;
  auto targs = truth.args();
  targs.scale = 1.0;
  const auto want = run_into<Rule, backend::reference>(targs);
  const auto unscaled = run_into<Rule, backend::reference>(c.template cast<double>().args());
  CHECK(relative_error(want.o, unscaled.o) > 1e-2);  // 0.3 is not the default K^(-1/2) = 0.25
  for_each_backend([&]<class Backend>() {
    auto a = c.args();
    a.scale = s;
    const auto got = run_into<Rule, Backend>(a);
    check_against(got, want, option_shape.T);
    CHECK(relative_error(got.final_state, unscaled.final_state) <= tolerance_for<float>());
  });
}

// ---- T = 0 -------------------------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("T = 0 is a no-op: outputs untouched, final state = initial state (or zero)", Rule,
                   LINEA_ALL_RULES) {
  for (bool init : {false, true})
    for (bool packed : {false, true}) {
      CAPTURE(init);
      CAPTURE(packed);
      case_shape s{.B = packed ? 1 : 3, .T = 0, .H = 1, .HV = 2, .K = 8, .V = 4, .initial_state = init};
      if (packed) s.seqlens = {0, 0, 0};
      auto c = random_case<Rule, float>::make(s);
      CHECK(c.N == 3);
      for_each_backend([&]<class Backend>() {
        const auto got = run_into<Rule, Backend>(c.args());  // final state pre-filled with the sentinel
        if (init)
          CHECK(relative_error(got.final_state, c.h0) == 0.0);
        else
          for (float x : got.final_state.values()) CHECK(x == 0.0f);
      });
    }
}

// B = 0: no sequences at all, a no-op in the recurrent form on every backend and thread count (the CPU one divided by
// the number of sequences before: SIGFPE); the backward: tests/forms/backward_test.cpp.
TEST_CASE_TEMPLATE("B = 0 is a no-op", Rule, LINEA_ALL_RULES) {
  auto c = random_case<Rule, float>::make({.B = 0, .T = 5, .H = 1, .HV = 2, .K = 8, .V = 4, .initial_state = true});
  CHECK(c.N == 0);
  for_each_backend([&]<class Backend>() { CHECK_NOTHROW((run_into<Rule, Backend>(c.args()))); });
  auto a = c.args();
  a.threads = 0;
  CHECK_NOTHROW(recurrent<Rule>(a));
}

TEST_CASE_TEMPLATE("an empty packed sequence passes its initial state through and writes no output", Rule,
                   LINEA_ALL_RULES) {
  auto c = random_case<Rule, double>::make(
      {.H = 1, .HV = 2, .K = 8, .V = 4, .seqlens = {5, 0, 4}, .initial_state = true});
  for_each_backend([&]<class Backend>() {
    const auto got = run_into<Rule, Backend>(c.args());
    const std::size_t row = 2 * 8 * 4;
    CHECK(relative_error(got.final_state.data() + row, c.h0.data() + row, row) == 0.0);
    for (double x : got.o.values()) CHECK(x != sentinel);  // the other sequences cover every token
  });
}
