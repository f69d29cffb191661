// Hand-worked golden values for T = 1 and T = 2, every rule, independent of the reference code.
//
// One head (B = H = HV = 1), K = V = 2, scale s = 0.5 given explicitly (so s·q is exact). States are
// written S[i][j], rows i = key channels, columns j = value channels; the four steps of SPEC §2 are
//   S' = Diag(α) S,  u = w ⊙ v − S'ᵀ(b ⊙ k),  S = S' + k uᵀ,  o = Sᵀ(s q).
// Every number below is a short binary fraction, so the float64 results are exact up to exp(log α) ≈ α.
// Both the CPU form and the float64 reference are checked against the same hand values.
#include <cmath>
#include <vector>

#include <doctest/doctest.h>

#include "support/compare.hpp"
#include "support/tolerance.hpp"

#include <linea/linea.hpp>
#include <linea/tensor.hpp>

using namespace linea;
using namespace linea::testing;

namespace {

using vec = std::vector<double>;

// Inputs per token (row-major [T, 2] for vectors, [T] for scalars); gates a rule does not use are ignored.
struct golden_inputs {
  index_t T;
  vec q, k, v;
  vec alpha;        // scalar decay α_t (g = log α)
  vec alpha_k;      // per-key decay α_t [T, 2] (gk = log α)
  vec beta;         // [T]
  vec b, w;         // GDN-2 erase / write gates [T, 2]
  vec h0;           // S_0 row-major [2, 2], or empty for zero
};

struct golden_expect {
  vec o;  // [T, 2]
  vec u;  // residual [T, 2]
  vec S;  // final state [2, 2]
};

tensor<double, 4> tensor4(const vec& x, index_t T) {
  tensor<double, 4> t({1, T, 1, 2});
  for (std::size_t i = 0; i < x.size(); ++i) t.data()[i] = x[i];
  return t;
}
tensor<double, 3> tensor3(const vec& x, index_t T) {
  tensor<double, 3> t({1, T, 1});
  for (std::size_t i = 0; i < x.size(); ++i) t.data()[i] = x[i];
  return t;
}
vec logs(const vec& x) {
  vec y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = std::log(x[i]);
  return y;
}

template <class Rule, class Backend>
void check_golden(const golden_inputs& in, const golden_expect& want) {
  const index_t T = in.T;
  auto q = tensor4(in.q, T), k = tensor4(in.k, T), v = tensor4(in.v, T);
  auto g = tensor3(logs(in.alpha), T), beta = tensor3(in.beta, T);
  auto gk = tensor4(logs(in.alpha_k), T), b = tensor4(in.b, T), w = tensor4(in.w, T);
  tensor<double, 4> o({1, T, 1, 2}, -7.0), u({1, T, 1, 2}, -7.0), S({1, 1, 2, 2}, -7.0), h0({1, 1, 2, 2});
  for (std::size_t i = 0; i < in.h0.size(); ++i) h0.data()[i] = in.h0[i];

  arguments<double> a{.q = q, .k = k, .v = v, .o = o, .final_state = S, .residual = u, .scale = 0.5};
  if constexpr (linea::reads(Rule::inputs, linea::input::g)) a.g = g;
  if constexpr (linea::reads(Rule::inputs, linea::input::gk)) a.gk = gk;
  if constexpr (linea::reads(Rule::inputs, linea::input::beta)) a.beta = beta;
  if constexpr (linea::reads(Rule::inputs, linea::input::b | linea::input::w)) a.b = b, a.w = w;
  if (!in.h0.empty()) a.initial_state = h0;
  recurrent<Rule, read::identity, Backend>(a);

  INFO(std::string(rule_name<Rule>::value), " T=", T);
  CHECK(relative_error(o.data(), want.o.data(), want.o.size()) <= tolerance::float64);
  CHECK(relative_error(u.data(), want.u.data(), want.u.size()) <= tolerance::float64);
  CHECK(relative_error(S.data(), want.S.data(), want.S.size()) <= tolerance::float64);
}

template <class Rule>
void check_golden_both(const golden_inputs& in, const golden_expect& want) {
  check_golden<Rule, backend::cpu>(in, want);
  check_golden<Rule, backend::reference>(in, want);
}

// T = 1 from S_0 = [[1, 2], [3, 4]]: q = (1, 2) so s·q = (0.5, 1); k = (1, 1); v = (2, 4).
// Gates: α = 0.5; α_k = (0.5, 0.25); β = 0.5; b = (0.5, 1); w = (1, 0.5).
const golden_inputs one_token{.T = 1,
                              .q = {1, 2},
                              .k = {1, 1},
                              .v = {2, 4},
                              .alpha = {0.5},
                              .alpha_k = {0.5, 0.25},
                              .beta = {0.5},
                              .b = {0.5, 1},
                              .w = {1, 0.5},
                              .h0 = {1, 2, 3, 4}};

// T = 2 from zero: token 1 q = (1, 0), k = (1, 0), v = (1, 2); token 2 q = (2, 1), k = (1, 1), v = (3, 1).
// s·q1 = (0.5, 0), s·q2 = (1, 0.5). Gates differ per token so that a token reading its neighbour's gate shows:
// α = (0.5, 0.25); α_k = ((0.25, 0.5), (0.5, 0.25)); β = (1, 0.5); b = ((1, 0.5), (0.5, 1));
// w = ((0.5, 1), (1, 0.5)). (Token 1 decays a zero state, so only token 2's gates act through α.)
const golden_inputs two_tokens{.T = 2,
                               .q = {1, 0, 2, 1},
                               .k = {1, 0, 1, 1},
                               .v = {1, 2, 3, 1},
                               .alpha = {0.5, 0.25},
                               .alpha_k = {0.25, 0.5, 0.5, 0.25},
                               .beta = {1, 0.5},
                               .b = {1, 0.5, 0.5, 1},
                               .w = {0.5, 1, 1, 0.5},
                               .h0 = {}};

}  // namespace

TEST_CASE("golden T=1: additive") {
  // S = S0 + k vᵀ = [[1+2, 2+4], [3+2, 4+4]] = [[3, 6], [5, 8]];  u = v = (2, 4)
  // o = Sᵀ(0.5, 1) = (3·0.5 + 5, 6·0.5 + 8) = (6.5, 11)
  check_golden_both<additive>(one_token, {.o = {6.5, 11}, .u = {2, 4}, .S = {3, 6, 5, 8}});
}
TEST_CASE("golden T=1: simple_gla") {
  // S' = 0.5 S0 = [[0.5, 1], [1.5, 2]];  S = S' + k vᵀ = [[2.5, 5], [3.5, 6]];  u = v
  // o = (2.5·0.5 + 3.5, 5·0.5 + 6) = (4.75, 8.5)
  check_golden_both<simple_gla>(one_token, {.o = {4.75, 8.5}, .u = {2, 4}, .S = {2.5, 5, 3.5, 6}});
}
TEST_CASE("golden T=1: gla") {
  // S' = Diag(0.5, 0.25) S0 = [[0.5, 1], [0.75, 1]];  S = [[2.5, 5], [2.75, 5]];  u = v
  // o = (2.5·0.5 + 2.75, 5·0.5 + 5) = (4, 7.5)
  check_golden_both<gla>(one_token, {.o = {4, 7.5}, .u = {2, 4}, .S = {2.5, 5, 2.75, 5}});
}
TEST_CASE("golden T=1: delta") {
  // S' = S0;  S'ᵀk = column sums = (4, 6);  u = 0.5·((2, 4) − (4, 6)) = (−1, −1)
  // S = S0 + k uᵀ = [[0, 1], [2, 3]];  o = (0·0.5 + 2, 1·0.5 + 3) = (2, 3.5)
  check_golden_both<delta>(one_token, {.o = {2, 3.5}, .u = {-1, -1}, .S = {0, 1, 2, 3}});
}
TEST_CASE("golden T=1: gated_delta") {
  // S' = [[0.5, 1], [1.5, 2]];  S'ᵀk = (2, 3);  u = 0.5·((2, 4) − (2, 3)) = (0, 0.5)
  // S = [[0.5, 1.5], [1.5, 2.5]];  o = (0.25 + 1.5, 0.75 + 2.5) = (1.75, 3.25)
  check_golden_both<gated_delta>(one_token, {.o = {1.75, 3.25}, .u = {0, 0.5}, .S = {0.5, 1.5, 1.5, 2.5}});
}
TEST_CASE("golden T=1: kda") {
  // S' = [[0.5, 1], [0.75, 1]];  S'ᵀk = (1.25, 2);  u = 0.5·((2, 4) − (1.25, 2)) = (0.375, 1)
  // S = [[0.875, 2], [1.125, 2]];  o = (0.4375 + 1.125, 1 + 2) = (1.5625, 3)
  check_golden_both<kda>(one_token, {.o = {1.5625, 3}, .u = {0.375, 1}, .S = {0.875, 2, 1.125, 2}});
}
TEST_CASE("golden T=1: gdn2") {
  // S' = [[0.5, 1], [0.75, 1]];  b ⊙ k = (0.5, 1);  S'ᵀ(b ⊙ k) = 0.5·(0.5, 1) + (0.75, 1) = (1, 1.5)
  // w ⊙ v = (2, 2);  u = (1, 0.5);  S = S' + k uᵀ = [[1.5, 1.5], [1.75, 1.5]]
  // o = (1.5·0.5 + 1.75, 1.5·0.5 + 1.5) = (2.5, 2.25)
  check_golden_both<gdn2>(one_token, {.o = {2.5, 2.25}, .u = {1, 0.5}, .S = {1.5, 1.5, 1.75, 1.5}});
}

TEST_CASE("golden T=2: additive") {
  // S1 = k1 v1ᵀ = [[1, 2], [0, 0]];  o1 = S1ᵀ(0.5, 0) = (0.5, 1)
  // S2 = S1 + k2 v2ᵀ = [[4, 3], [3, 1]];  o2 = S2ᵀ(1, 0.5) = (4 + 1.5, 3 + 0.5) = (5.5, 3.5)
  check_golden_both<additive>(two_tokens, {.o = {0.5, 1, 5.5, 3.5}, .u = {1, 2, 3, 1}, .S = {4, 3, 3, 1}});
}
TEST_CASE("golden T=2: simple_gla") {
  // S1 = [[1, 2], [0, 0]], o1 = (0.5, 1);  S' = 0.25 S1 = [[0.25, 0.5], [0, 0]]
  // S2 = [[3.25, 1.5], [3, 1]];  o2 = (3.25 + 1.5, 1.5 + 0.5) = (4.75, 2)
  check_golden_both<simple_gla>(two_tokens, {.o = {0.5, 1, 4.75, 2}, .u = {1, 2, 3, 1}, .S = {3.25, 1.5, 3, 1}});
}
TEST_CASE("golden T=2: gla") {
  // S1 = [[1, 2], [0, 0]], o1 = (0.5, 1);  S' = Diag(0.5, 0.25) S1 = [[0.5, 1], [0, 0]]
  // S2 = [[3.5, 2], [3, 1]];  o2 = (3.5 + 1.5, 2 + 0.5) = (5, 2.5)
  check_golden_both<gla>(two_tokens, {.o = {0.5, 1, 5, 2.5}, .u = {1, 2, 3, 1}, .S = {3.5, 2, 3, 1}});
}
TEST_CASE("golden T=2: delta") {
  // token 1: β = 1, S' = 0, u1 = v1 = (1, 2), S1 = [[1, 2], [0, 0]], o1 = (0.5, 1)
  // token 2: S1ᵀk2 = (1, 2), u2 = 0.5·((3, 1) − (1, 2)) = (1, −0.5)
  //          S2 = S1 + k2 u2ᵀ = [[2, 1.5], [1, −0.5]];  o2 = (2 + 0.5, 1.5 − 0.25) = (2.5, 1.25)
  check_golden_both<delta>(two_tokens, {.o = {0.5, 1, 2.5, 1.25}, .u = {1, 2, 1, -0.5}, .S = {2, 1.5, 1, -0.5}});
}
TEST_CASE("golden T=2: gated_delta") {
  // token 1 as delta; token 2: S' = 0.25 S1 = [[0.25, 0.5], [0, 0]], S'ᵀk2 = (0.25, 0.5)
  //   u2 = 0.5·((3, 1) − (0.25, 0.5)) = (1.375, 0.25);  S2 = [[1.625, 0.75], [1.375, 0.25]]
  //   o2 = (1.625 + 0.6875, 0.75 + 0.125) = (2.3125, 0.875)
  check_golden_both<gated_delta>(two_tokens, {.o = {0.5, 1, 2.3125, 0.875},
                                              .u = {1, 2, 1.375, 0.25},
                                              .S = {1.625, 0.75, 1.375, 0.25}});
}
TEST_CASE("golden T=2: kda") {
  // token 1 as delta; token 2: S' = Diag(0.5, 0.25) S1 = [[0.5, 1], [0, 0]], S'ᵀk2 = (0.5, 1)
  //   u2 = 0.5·((3, 1) − (0.5, 1)) = (1.25, 0);  S2 = [[1.75, 1], [1.25, 0]]
  //   o2 = (1.75 + 0.625, 1 + 0) = (2.375, 1)
  check_golden_both<kda>(two_tokens, {.o = {0.5, 1, 2.375, 1}, .u = {1, 2, 1.25, 0}, .S = {1.75, 1, 1.25, 0}});
}
TEST_CASE("golden T=2: gdn2") {
  // token 1: S' = 0, u1 = w1 ⊙ v1 = (0.5, 2), S1 = k1 u1ᵀ = [[0.5, 2], [0, 0]], o1 = 0.5·(0.5, 2) = (0.25, 1)
  // token 2: S' = Diag(0.5, 0.25) S1 = [[0.25, 1], [0, 0]];  b2 ⊙ k2 = (0.5, 1);  S'ᵀ(b ⊙ k) = (0.125, 0.5)
  //   w2 ⊙ v2 = (3, 0.5);  u2 = (2.875, 0);  S2 = [[3.125, 1], [2.875, 0]]
  //   o2 = (3.125 + 1.4375, 1 + 0) = (4.5625, 1)
  check_golden_both<gdn2>(two_tokens, {.o = {0.25, 1, 4.5625, 1}, .u = {0.5, 2, 2.875, 0}, .S = {3.125, 1, 2.875, 0}});
}
