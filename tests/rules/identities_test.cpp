// The rule identities of SPEC §2, checked on the CPU form and on the float64 reference (float64 inputs):
//   KDA with gk = g·1 is gated delta;  gated delta with g = 0 is delta;  GDN-2 with b = w = β·1 is KDA;
//   gla with gk = g·1 is simple_gla;   simple_gla with g = 0 is additive.
// Each identity turns one rule's random inputs into the other rule's inputs, runs both and compares
// o, the final state and the residual.
#include <doctest/doctest.h>

#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/outputs.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

const case_shape identity_shape{.B = 2, .T = 70, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true};

// gk[b, t, hv, i] = x[b, t, hv] for every key channel i: a scalar gate spread over K.
tensor<double, 4> spread_over(view<const double, 3> x, index_t width) {
  tensor<double, 4> y({x.extent(0), x.extent(1), x.extent(2), width});
  for (index_t b = 0; b < x.extent(0); ++b)
    for (index_t t = 0; t < x.extent(1); ++t)
      for (index_t h = 0; h < x.extent(2); ++h)
        for (index_t i = 0; i < width; ++i) y(b, t, h, i) = x(b, t, h);
  return y;
}

template <class A, class B>
void check_same(const outputs<A>& x, const outputs<B>& y) {
  CHECK(relative_error(x.o, y.o) <= tolerance::float64);
  CHECK(relative_error(x.final_state, y.final_state) <= tolerance::float64);
  CHECK(relative_error(x.residual, y.residual) <= tolerance::float64);
}

// Runs `From` on a and `To` on b on both backends and compares.
template <class From, class To>
void check_identity(const arguments<double>& a, const arguments<double>& b) {
  SUBCASE("cpu") { check_same(run_into<From, backend::cpu>(a), run_into<To, backend::cpu>(b)); }
  SUBCASE("reference") { check_same(run_into<From, backend::reference>(a), run_into<To, backend::reference>(b)); }
}

}  // namespace

TEST_CASE("identity: kda with gk = g·1 is gated_delta") {
  auto c = random_case<gated_delta, double>::make(identity_shape);
  auto gd = c.args();
  auto gk = spread_over(gd.g, identity_shape.K);
  auto kd = gd;
  kd.g = {};
  kd.gk = gk;
  check_identity<kda, gated_delta>(kd, gd);
}

TEST_CASE("identity: gated_delta with g = 0 is delta") {
  auto c = random_case<delta, double>::make(identity_shape);
  auto d = c.args();
  tensor<double, 3> zero({identity_shape.B, identity_shape.T, identity_shape.HV}, 0.0);
  auto gd = d;
  gd.g = zero;
  check_identity<gated_delta, delta>(gd, d);
}

TEST_CASE("identity: gdn2 with b = w = β·1 is kda") {
  auto c = random_case<kda, double>::make(identity_shape);
  auto kd = c.args();
  auto b = spread_over(kd.beta, identity_shape.K), w = spread_over(kd.beta, identity_shape.V);
  auto g2 = kd;
  g2.beta = {};
  g2.b = b, g2.w = w;
  check_identity<gdn2, kda>(g2, kd);
}

TEST_CASE("identity: gla with gk = g·1 is simple_gla") {
  auto c = random_case<simple_gla, double>::make(identity_shape);
  auto sg = c.args();
  auto gk = spread_over(sg.g, identity_shape.K);
  auto gl = sg;
  gl.g = {};
  gl.gk = gk;
  check_identity<gla, simple_gla>(gl, sg);
}

TEST_CASE("identity: simple_gla with g = 0 is additive") {
  auto c = random_case<additive, double>::make(identity_shape);
  auto ad = c.args();
  tensor<double, 3> zero({identity_shape.B, identity_shape.T, identity_shape.HV}, 0.0);
  auto sg = ad;
  sg.g = zero;
  check_identity<simple_gla, additive>(sg, ad);
}

TEST_CASE("identity check is sensitive: gated_delta with g = log 0.9 differs from delta") {
  // Guards the identity tests against comparing a rule with itself by accident.
  auto c = random_case<delta, double>::make(identity_shape);
  auto d = c.args();
  tensor<double, 3> g({identity_shape.B, identity_shape.T, identity_shape.HV}, std::log(0.9));
  auto gd = d;
  gd.g = g;
  CHECK(relative_error(run_into<gated_delta>(gd).o, run_into<delta>(d).o) > 1e-3);
}
