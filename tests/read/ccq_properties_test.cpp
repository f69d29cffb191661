// CCQ properties that hold exactly or by construction: λ = 0 is the identity read (bitwise), Σ_1 = 0 so
// q̃_1 = q_1, streaming with carried statistics equals one call (recurrent form and decode step), hand-derived
// golden values, and argument errors before anything is written.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "support/rules.hpp"
#include "read/ccq_forms.hpp"
#include "read/ccq_inputs.hpp"
#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

template <class T, int Rank>
bool bitwise_equal(const tensor<T, Rank>& a, const tensor<T, Rank>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Runs `Form` with CCQ at λ = 0 and with the identity read on the same inputs: o, S_T, u must be bitwise equal.
template <class Rule, class Weighting, class Form>
void lambda_zero_is_identity(bool varlen) {
  case_shape shape{.B = 2, .T = 70, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = true};
  if (varlen) shape.seqlens = {3, 67, 20};
  auto c = random_case<Rule, float>::make(shape);
  auto id = random_case<Rule, float>::make(shape);  // same seed: same inputs
  auto s = ccq_tensors<float>::make(c.shape, c.N, {.initial_stats = true, .lambda_max = 0});
  auto a = c.args();
  s.attach(a);
  Form::template run<Rule, read::ccq<Weighting>>(a);
  Form::template run<Rule, read::identity>(id.args());
  CHECK(bitwise_equal(c.o, id.o));
  CHECK(bitwise_equal(c.ht, id.ht));
  CHECK(bitwise_equal(c.residual, id.residual));
  bool q_tilde_is_q = true;  // q̃ = q at every token and value head
  for (index_t bt = 0; bt < c.shape.B; ++bt)
    for (index_t t = 0; t < c.shape.T; ++t)
      for (index_t hv = 0; hv < c.shape.HV; ++hv)
        for (index_t i = 0; i < c.shape.K; ++i) q_tilde_is_q &= s.q_tilde(bt, t, hv, i) == c.q(bt, t, hv / 2, i);
  CHECK(q_tilde_is_q);
}

// The first token of every sequence, with no initial statistics, reads with its own query: Σ_1 = 0.
// Token by token, Σ_1 = k kᵀ/1 − (k/1)(k/1)ᵀ subtracts the same rounded products: exactly zero, unless the compiler
// fuses a product and the subtraction into one FMA (-march=native), which leaves one rounding error of a product.
// The chunkwise form sums the same products in another order. Both: within SPEC §5.
template <class Rule, class Weighting, class Form>
void first_token_query_is_unchanged() {
  case_shape shape{.B = 1, .T = 0, .H = 2, .HV = 4, .K = 32, .V = 16, .seqlens = {1, 9, 30}};
  auto c = random_case<Rule, float>::make(shape);
  auto s = ccq_tensors<float>::make(c.shape, c.N, {});
  auto a = c.args();
  s.attach(a);
  Form::template run<Rule, read::ccq<Weighting>>(a);
  for (index_t n = 0; n + 1 < static_cast<index_t>(c.cu_seqlens.size()); ++n) {
    const index_t t = c.cu_seqlens[n];
    for (index_t hv = 0; hv < c.shape.HV; ++hv) {
      const float* q = &c.q(0, t, hv / 2, 0);
      const float* qt = &s.q_tilde(0, t, hv, 0);
      CHECK(relative_error(qt, q, c.shape.K) <= tolerance_for<float>());
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("ccq: lambda = 0 gives exactly the identity read", Rule, LINEA_ALL_RULES) {
  for (bool varlen : {false, true}) {
    CAPTURE(varlen);
    lambda_zero_is_identity<Rule, read::uniform, recurrent_form>(varlen);
    lambda_zero_is_identity<Rule, read::decayed, recurrent_form>(varlen);
    lambda_zero_is_identity<Rule, read::uniform, chunkwise_form<16>>(varlen);
    lambda_zero_is_identity<Rule, read::decayed, chunkwise_form<64>>(varlen);
  }
}

TEST_CASE_TEMPLATE("ccq: Sigma_1 = 0, so the first query of every sequence is unchanged", Rule, additive, gla,
                   gated_delta, gdn2) {
  first_token_query_is_unchanged<Rule, read::uniform, recurrent_form>();
  first_token_query_is_unchanged<Rule, read::decayed, recurrent_form>();
  first_token_query_is_unchanged<Rule, read::uniform, chunkwise_form<16>>();
  first_token_query_is_unchanged<Rule, read::decayed, chunkwise_form<64>>();
}

// The same tokens in one call, and in two calls with the state and statistics carried between them.
template <class Form>
void streaming_equals_one_call(bool bitwise) {
  using Rule = gated_delta;
  using Read = read::ccq<read::decayed>;
  case_shape shape{.B = 2, .T = 90, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = true};
  auto whole = random_case<Rule, float>::make(shape);
  auto s = ccq_tensors<float>::make(whole.shape, whole.N, {.initial_stats = true});
  auto a = whole.args();
  s.attach(a);
  Form::template run<Rule, Read>(a);

  // The same tokens in two calls: [0, 37) then [37, 90), the state and statistics carried between them.
  const index_t cut = 37;
  auto piece = random_case<Rule, float>::make(shape);  // outputs land in piece.o; inputs are sliced views
  auto s2 = ccq_tensors<float>::make(whole.shape, whole.N, {.initial_stats = true});
  auto slice = [&](auto v, index_t t0, index_t len) {  // view over tokens [t0, t0 + len) along axis 1
    v.ptr += t0 * v.str[1];
    v.ext[1] = len;
    return v;
  };
  tensor<float, 4> mid_state({whole.N, shape.HV, shape.K, shape.V});
  tensor<float, 4> mid_C({whole.N, shape.HV, shape.K, shape.K});
  tensor<float, 3> mid_m({whole.N, shape.HV, shape.K});
  tensor<float, 2> mid_z({whole.N, shape.HV});
  for (int part = 0; part < 2; ++part) {
    const index_t t0 = part ? cut : 0, len = part ? shape.T - cut : cut;
    auto b = piece.args();
    b.q = slice(b.q, t0, len), b.k = slice(b.k, t0, len), b.v = slice(b.v, t0, len);
    b.g = slice(b.g, t0, len), b.beta = slice(b.beta, t0, len);
    b.o = slice(b.o, t0, len), b.residual = slice(b.residual, t0, len);
    b.ccq.lambda = slice(view<const float, 3>(s2.lambda), t0, len);
    b.ccq.q_tilde = slice(view<float, 4>(s2.q_tilde), t0, len);
    if (part == 0) {
      b.ccq.C0 = s2.C0, b.ccq.m0 = s2.m0, b.ccq.z0 = s2.z0;
      b.final_state = mid_state, b.ccq.C = mid_C, b.ccq.m = mid_m, b.ccq.z = mid_z;
    } else {
      b.initial_state = mid_state, b.ccq.C0 = mid_C, b.ccq.m0 = mid_m, b.ccq.z0 = mid_z;
      b.ccq.C = s2.C, b.ccq.m = s2.m, b.ccq.z = s2.z;
    }
    Form::template run<Rule, Read>(b);
  }
  // The write path may regroup its arithmetic at a call boundary (the CPU backend defers decays): o and S_T
  // agree within SPEC §5. So does C, whose decay the CPU recurrent form also defers (backend/cpu/ccq.hpp), and
  // with it q̃. m and z are the same operations in the same order either way: bit for bit there.
  const double tol = tolerance_for<float>();
  CHECK(relative_error(piece.o, whole.o) <= tol);
  CHECK(relative_error(piece.ht, whole.ht) <= tol);
  if (bitwise) {
    CHECK(relative_error(s2.q_tilde, s.q_tilde) <= tol);
    CHECK(relative_error(s2.C, s.C) <= tol);
    CHECK(bitwise_equal(s2.m, s.m));
    CHECK(bitwise_equal(s2.z, s.z));
  } else {  // the chunkwise form cuts its chunks elsewhere
    CHECK(relative_error(s2.q_tilde, s.q_tilde) <= tol);
    CHECK(relative_error(s2.C, s.C) <= tol);
    CHECK(relative_error(s2.m, s.m) <= tol);
    CHECK(relative_error(s2.z, s.z) <= tol);
  }
}

TEST_CASE("ccq: streaming with carried statistics equals one call") {
  streaming_equals_one_call<recurrent_form>(true);
  streaming_equals_one_call<chunkwise_form<16>>(false);
}


TEST_CASE("ccq: the decode step over a state and statistics pool equals one recurrent call") {
  using Rule = kda;
  using Read = read::ccq<read::decayed>;
  // Two sequences of 12 tokens, stored in pool rows 2 and 0 of a pool of 3.
  case_shape shape{.B = 2, .T = 12, .H = 1, .HV = 2, .K = 16, .V = 8, .initial_state = true};
  auto whole = random_case<Rule, float>::make(shape);
  auto s = ccq_tensors<float>::make(whole.shape, whole.N, {.initial_stats = true, .explicit_log_decay = true});
  auto a = whole.args();
  s.attach(a);
  recurrent<Rule, Read>(a);

  const std::int32_t rows[2] = {2, 0};
  const index_t P = 3, HV = shape.HV, K = shape.K, V = shape.V;
  tensor<float, 4> pool({P, HV, K, V}), C({P, HV, K, K});
  tensor<float, 3> m({P, HV, K});
  tensor<float, 2> z({P, HV});
  auto step_case = random_case<Rule, float>::make(shape);  // its o receives the step outputs
  tensor<float, 4> qt({shape.B, shape.T, HV, K});
  for (index_t b = 0; b < shape.B; ++b) {
    for (index_t hv = 0; hv < HV; ++hv) {
      z(rows[b], hv) = s.z0(b, hv);
      for (index_t i = 0; i < K; ++i) {
        m(rows[b], hv, i) = s.m0(b, hv, i);
        for (index_t j = 0; j < K; ++j) C(rows[b], hv, i, j) = s.C0(b, hv, i, j);
        for (index_t j = 0; j < V; ++j) pool(rows[b], hv, i, j) = whole.h0(b, hv, i, j);
      }
    }
  }
  auto token_of = [](auto v, index_t t) {  // [B, T, ...] → [B, 1, ...] at token t
    v.ptr += t * v.str[1];
    v.ext[1] = 1;
    return v;
  };
  for (index_t t = 0; t < shape.T; ++t) {
    auto b = step_case.args();
    b.q = token_of(b.q, t), b.k = token_of(b.k, t), b.v = token_of(b.v, t);
    b.gk = token_of(b.gk, t), b.beta = token_of(b.beta, t);
    b.o = token_of(b.o, t);
    b.residual = {};
    b.initial_state = pool, b.final_state = pool;  // in place
    b.ccq.lambda = token_of(view<const float, 3>(s.lambda), t);
    b.ccq.log_decay = token_of(view<const float, 3>(s.log_decay), t);
    b.ccq.C0 = C, b.ccq.m0 = m, b.ccq.z0 = z, b.ccq.C = C, b.ccq.m = m, b.ccq.z = z;
    b.ccq.q_tilde = token_of(view<float, 4>(qt), t);
    b.state_indices = rows;
    step<Rule, Read>(b);
  }
  const double tol = tolerance_for<float>();
  CHECK(relative_error(step_case.o, whole.o) <= tol);
  CHECK(relative_error(qt, s.q_tilde) <= tol);
  for (index_t b = 0; b < shape.B; ++b) {
    CHECK(relative_error(&pool(rows[b], 0, 0, 0), &whole.ht(b, 0, 0, 0), HV * K * V) <= tol);
    CHECK(relative_error(&C(rows[b], 0, 0, 0), &s.C(b, 0, 0, 0), HV * K * K) <= tol);
    CHECK(relative_error(&m(rows[b], 0, 0), &s.m(b, 0, 0), HV * K) <= tol);
    CHECK(relative_error(&z(rows[b], 0), &s.z(b, 0), HV) <= tol);
  }
  CHECK(z(1, 0) == 0.0f);  // the unused pool row is never touched
}

// A decode row that names no state (state_indices = −1) writes zeros to every output row it was given: o and q̃ (q̃
// kept its old values before).
TEST_CASE("ccq: a skipped decode row zeroes its q_tilde as its o") {
  const float q[2 * 2] = {1, 0, 0, 1}, k[2 * 2] = {1, 0, 0, 1}, v[2 * 2] = {3, -1, 5, 2}, lam[2] = {0.5f, 0.5f};
  const std::int32_t rows[2] = {0, -1};
  auto each_backend = [&]<class Backend>() {
    float o[4], qt[4], pool[1 * 2 * 2] = {1, 2, 3, 4};
    std::fill(o, o + 4, 777.f), std::fill(qt, qt + 4, 777.f);
    arguments<float> a;
    a.q = contiguous<4>(q, {2, 1, 1, 2}), a.k = contiguous<4>(k, {2, 1, 1, 2}), a.v = contiguous<4>(v, {2, 1, 1, 2});
    a.o = contiguous<4>(o, {2, 1, 1, 2});
    a.initial_state = contiguous<4>(static_cast<const float*>(pool), {1, 1, 2, 2});
    a.final_state = contiguous<4>(pool, {1, 1, 2, 2});
    a.state_indices = rows;
    a.ccq.lambda = contiguous<3>(lam, {2, 1, 1});
    a.ccq.q_tilde = contiguous<4>(qt, {2, 1, 1, 2});
    step<additive, read::ccq<read::uniform>, Backend>(a);
    CHECK(o[0] != 777.f);
    CHECK(qt[0] != 777.f);
    CHECK(o[2] == 0.f);
    CHECK(o[3] == 0.f);
    CHECK(qt[2] == 0.f);
    CHECK(qt[3] == 0.f);
  };
  each_backend.template operator()<backend::cpu>();
  each_backend.template operator()<backend::generic>();
}

// Hand-derived golden values, K = 2: keys e1 then e2, query (1, 0) at token 2, λ = 1.
//   uniform: C = I, m = (1, 1), z = 2 → Σ = I/2 − (½,½)(½,½)ᵀ = [[¼, −¼], [−¼, ¼]] → q̃ = (1 − ¼, ¼) = (¾, ¼).
//   decayed, a_2 = ½: C = diag(½, 1), m = (½, 1), z = 3/2 → C/z = diag(⅓, ⅔), μ = (⅓, ⅔),
//            Σ = [[⅓ − 1/9, −2/9], [−2/9, ⅔ − 4/9]] = [[2/9, −2/9], [−2/9, 2/9]] → q̃ = (7/9, 2/9).
// With values v1, v2 and the additive write, o_2 = s (q̃_1 v1 + q̃_2 v2).
TEST_CASE("ccq: hand-derived golden values on two tokens") {
  const double q[2 * 2] = {1, 0, 1, 0}, k[2 * 2] = {1, 0, 0, 1}, v[2 * 2] = {3, -1, 5, 2};
  const double lam[2] = {1, 1}, g[2] = {0, std::log(0.5)};
  double o[4], qt[4];
  arguments<double> a;
  a.q = contiguous<4>(q, {1, 2, 1, 2}), a.k = contiguous<4>(k, {1, 2, 1, 2}), a.v = contiguous<4>(v, {1, 2, 1, 2});
  a.o = contiguous<4>(o, {1, 2, 1, 2});
  a.scale = 1.0;
  a.ccq.lambda = contiguous<3>(lam, {1, 2, 1});
  a.ccq.q_tilde = contiguous<4>(qt, {1, 2, 1, 2});

  recurrent<additive, read::ccq<read::uniform>>(a);
  CHECK(qt[2] == doctest::Approx(0.75).epsilon(1e-15));
  CHECK(qt[3] == doctest::Approx(0.25).epsilon(1e-15));
  CHECK(o[2] == doctest::Approx(0.75 * 3 + 0.25 * 5).epsilon(1e-15));
  CHECK(o[3] == doctest::Approx(0.75 * -1 + 0.25 * 2).epsilon(1e-15));

  a.g = contiguous<3>(g, {1, 2, 1});  // simple_gla with α_2 = ½: the statistics decay with it by default
  recurrent<simple_gla, read::ccq<read::decayed>>(a);
  CHECK(qt[2] == doctest::Approx(7.0 / 9).epsilon(1e-15));
  CHECK(qt[3] == doctest::Approx(2.0 / 9).epsilon(1e-15));
  CHECK(o[2] == doctest::Approx(7.0 / 9 * 0.5 * 3 + 2.0 / 9 * 5).epsilon(1e-15));  // S_2 = ½ k1v1ᵀ + k2v2ᵀ

  reference::recurrent<simple_gla, read::ccq<read::decayed>>(a);
  CHECK(qt[2] == doctest::Approx(7.0 / 9).epsilon(1e-15));
}

TEST_CASE("ccq: bad CCQ arguments are named before anything is written") {
  auto c = random_case<gated_delta, float>::make({.B = 2, .T = 10, .H = 2, .HV = 2, .K = 8, .V = 4});
  auto s = ccq_tensors<float>::make(c.shape, c.N, {.initial_stats = true, .explicit_log_decay = true});
  std::fill(c.o.values().begin(), c.o.values().end(), 7.0f);
  auto expect_error = [&](const arguments<float>& a, auto run, const std::string& needle) {
    std::string what;
    try {
      run(a);
    } catch (const linea::error& e) {
      what = e.what();
    }
    CAPTURE(what);
    CHECK(what.find(needle) != std::string::npos);
    CHECK(std::all_of(c.o.values().begin(), c.o.values().end(), [](float x) { return x == 7.0f; }));
  };
  auto decayed_run = [](const arguments<float>& a) { recurrent<gated_delta, read::ccq<read::decayed>>(a); };
  auto uniform_run = [](const arguments<float>& a) { recurrent<gated_delta, read::ccq<read::uniform>>(a); };

  auto a = c.args();
  expect_error(a, decayed_run, "'ccq.lambda' is missing");
  s.attach(a);
  expect_error(a, uniform_run, "'ccq.log_decay' (shape [2, 10, 2]) must not be given");
  tensor<float, 3> short_lambda({2, 9, 2});
  auto b = a;
  b.ccq.lambda = short_lambda;
  expect_error(b, decayed_run, "'ccq.lambda' has shape [2, 9, 2]; expected [B, T, HV] = [2, 10, 2]");
  b = a;
  b.ccq.m0 = {};
  expect_error(b, decayed_run, "'ccq.m0' is missing");
  tensor<float, 4> wide_C({2, 2, 8, 7});
  b = a;
  b.ccq.C = wide_C;
  expect_error(b, decayed_run, "'ccq.C' has shape [2, 2, 8, 7]; expected [N, HV, K, K] = [2, 2, 8, 8]");
  tensor<float, 4> qt_k({2, 10, 2, 4});
  b = a;
  b.ccq.q_tilde = qt_k;
  expect_error(b, decayed_run, "'ccq.q_tilde' has shape [2, 10, 2, 4]");
  tensor<float, 2> z0({3, 2});
  b = a;
  b.ccq.z0 = z0;
  expect_error(b, decayed_run, "'ccq.z0' has shape [3, 2]; expected [N, HV] = [2, 2]");
  // ... and the identity read refuses CCQ arguments.
  expect_error(a, [](const arguments<float>& x) { recurrent<gated_delta>(x); }, "'ccq.lambda'");
}
