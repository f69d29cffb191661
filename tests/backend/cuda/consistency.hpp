// tests/backend/cuda/consistency.hpp — every CUDA form against the float64 reference (SPEC §5 tolerances for the input
// type), one rule per translation unit: LINEA_CUDA_CONSISTENCY(rule) expands to that rule's test cases.
#pragma once
#include <doctest/doctest.h>

#include <numeric>
#include <string>

#include "backend/cuda/device_case.hpp"
#include "support/compare.hpp"
#include "support/tolerance.hpp"

namespace linea::testing {

struct cuda_recurrent {
  static constexpr const char* name = "recurrent";
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    linea::recurrent<Rule, Read, backend::cuda>(a);
  }
};
struct cuda_chunkwise {
  static constexpr const char* name = "chunkwise";
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    linea::chunkwise<Rule, Read, backend::cuda>(a);
  }
};
// The decode step over a batch of single tokens (row b uses state b): T = 1 cases only.
struct cuda_step {
  static constexpr const char* name = "step";
  template <class Rule, class Read, class T, class S>
  static void run(const arguments<T, S>& a) {
    linea::step<Rule, Read, backend::cuda>(a);
  }
};

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, bf16>) return "bf16";
  else return "fp16";
}

template <class X, int R, class Y>
void expect_close(const char* what, const tensor<X, R>& x, const tensor<Y, R>& ref, double tol) {
  const double e = relative_error(x, ref);
  INFO(what << ": relative error " << e << " (tolerance " << tol << ")");
  CHECK(all_finite(x));
  CHECK(e <= tol);
}

// Runs `Form` on the GPU and the float64 reference on the same case; compares every output.
template <class Rule, class Read, class Form, class T>
void check_against_reference(const case_shape& shape, const ccq_options& copt = {}) {
  constexpr bool ccq = !Read::is_identity;
  auto c = random_case<Rule, T>::make(shape);
  ccq_tensors<T> s;
  if constexpr (ccq) s = ccq_tensors<T>::make(c.shape, c.N, copt);
  auto ref = c.template cast<double>();
  auto sref = s.template cast<double>();
  auto ra = ref.args();
  if constexpr (ccq) sref.attach(ra);
  reference::recurrent<Rule, Read>(ra);

  device_case<Rule, T> d{c, ccq ? &s : nullptr};
  auto ha = c.args();
  if constexpr (ccq) s.attach(ha);
  Form::template run<Rule, Read>(d.args(ha));
  d.back();

  const double tol = tolerance_for<T>(c.shape.T);
  INFO(rule_name<Rule>::value << " " << Form::name << " " << type_name<T>() << (ccq ? " ccq" : " identity")
                              << " B=" << c.shape.B << " T=" << c.shape.T << " HV=" << c.shape.HV << " K=" << c.shape.K
                              << " V=" << c.shape.V);
  expect_close("o", c.o, ref.o, tol);
  expect_close("final state", c.ht, ref.ht, tol);
  expect_close("residual", c.residual, ref.residual, tol);
  if constexpr (ccq) {
    expect_close("q_tilde", s.q_tilde, sref.q_tilde, tol);
    expect_close("ccq C", s.C, sref.C, tol);
    expect_close("ccq m", s.m, sref.m, tol);
    expect_close("ccq z", s.z, sref.z, tol);
  }
}

// The decode step over a state pool: rows read and write pool[state_indices[b]] in place; −1 skips a row.
template <class Rule, class T>
void check_step_pool() {
  const index_t B = 5;
  auto c = random_case<Rule, T>::make({.B = B, .T = 1, .H = 2, .HV = 4, .K = 40, .V = 24, .initial_state = true, .seed = 7});
  const std::vector<std::int32_t> idx = {3, -1, 0, 4, 1};
  // Reference: row b starts from pool[idx[b]]; a gathered case computes every row at once.
  auto ref = c.template cast<double>();
  auto gathered = ref;
  for (index_t b = 0; b < B; ++b)
    for (std::size_t e = 0; e < static_cast<std::size_t>(4 * 40 * 24); ++e)
      gathered.h0.data()[b * 4 * 40 * 24 + e] = ref.h0.data()[std::max(idx[b], 0) * 4 * 40 * 24 + e];
  reference::recurrent<Rule, read::identity>(gathered.args());

  device_case<Rule, T> d{c};
  auto ha = c.args();
  ha.state_indices = idx;
  auto da = d.args(ha);
  da.final_state = strided<4>(const_cast<float*>(da.initial_state.ptr), {B, 4, 40, 24},
                              {4 * 40 * 24, 40 * 24, 24, 1});  // in place: the pool
  linea::step<Rule, read::identity, backend::cuda>(da);
  tensor<float, 4> pool({B, 4, 40, 24});
  cuda_ok(cudaDeviceSynchronize());
  copy_back(pool, da.final_state.ptr);
  copy_back(c.o, d.o);
  copy_back(c.residual, d.res);

  tensor<double, 4> want_pool = ref.h0;
  tensor<double, 4> want_o = gathered.o, want_u = gathered.residual;
  for (index_t b = 0; b < B; ++b) {
    if (idx[b] < 0) {  // a skipped row writes zeros to o and the residual
      for (std::size_t e = 0; e < static_cast<std::size_t>(4 * 24); ++e)
        want_o.data()[b * 4 * 24 + e] = 0, want_u.data()[b * 4 * 24 + e] = 0;
      continue;
    }
    for (std::size_t e = 0; e < static_cast<std::size_t>(4 * 40 * 24); ++e)
      want_pool.data()[idx[b] * 4 * 40 * 24 + e] = gathered.ht.data()[b * 4 * 40 * 24 + e];
  }
  INFO(rule_name<Rule>::value << " step pool " << type_name<T>());
  expect_close("o", c.o, want_o, tolerance_for<T>());
  expect_close("state pool", pool, want_pool, tolerance_for<T>());
  expect_close("residual", c.residual, want_u, tolerance_for<T>());
}

template <class Rule, class Form>
void consistency_suite() {
  using U = read::ccq<read::uniform>;
  using D = read::ccq<read::decayed>;
  const case_shape gva{.B = 2, .T = 150, .H = 2, .HV = 4, .K = 48, .V = 40, .initial_state = true, .seed = 11};
  const case_shape full{.B = 1, .T = 200, .H = 1, .HV = 2, .K = 128, .V = 128, .initial_state = true, .seed = 12};
  const case_shape varlen{.H = 1, .HV = 2, .K = 32, .V = 64, .seqlens = {37, 0, 130, 64}, .initial_state = true,
                          .head_first = true, .seed = 13};
  const case_shape extreme{.B = 1, .T = 160, .H = 2, .HV = 2, .K = 64, .V = 32, .gates = gate_range::extreme,
                           .beta_max = 2, .seed = 14};
  SUBCASE("identity read") {
    check_against_reference<Rule, read::identity, Form, float>(gva);
    check_against_reference<Rule, read::identity, Form, bf16>(gva);
    check_against_reference<Rule, read::identity, Form, fp16>(gva);
    check_against_reference<Rule, read::identity, Form, float>(full);
    check_against_reference<Rule, read::identity, Form, bf16>(full);
    check_against_reference<Rule, read::identity, Form, float>(varlen);
    check_against_reference<Rule, read::identity, Form, bf16>(varlen);
    check_against_reference<Rule, read::identity, Form, float>(extreme);
    check_against_reference<Rule, read::identity, Form, bf16>(extreme);
  }
  SUBCASE("CCQ read") {
    check_against_reference<Rule, U, Form, float>(gva);
    check_against_reference<Rule, U, Form, bf16>(gva, {.initial_stats = true});
    check_against_reference<Rule, D, Form, float>(gva, {.initial_stats = true});
    check_against_reference<Rule, D, Form, bf16>(full, {.explicit_log_decay = true});
    check_against_reference<Rule, D, Form, float>(varlen, {.initial_stats = true, .explicit_log_decay = true});
    // 16-bit chunkwise: the chunk-parallel statistics (ccq_chunked.hpp) with one value head per key head, with
    // packed sequences, and with the default c_t under extreme gates
    check_against_reference<Rule, U, Form, bf16>(extreme);
    check_against_reference<Rule, D, Form, bf16>(extreme, {.initial_stats = true});
    check_against_reference<Rule, D, Form, bf16>(varlen, {.initial_stats = true});
  }
}

}  // namespace linea::testing

#define LINEA_CUDA_CONSISTENCY(rule)                                                                          \
  TEST_CASE("cuda " #rule ": recurrent form vs float64 reference") {                                         \
    linea::testing::consistency_suite<linea::rule, linea::testing::cuda_recurrent>();                        \
  }                                                                                                           \
  TEST_CASE("cuda " #rule ": chunkwise form vs float64 reference") {                                         \
    linea::testing::consistency_suite<linea::rule, linea::testing::cuda_chunkwise>();                        \
  }                                                                                                           \
  TEST_CASE("cuda " #rule ": decode step vs float64 reference") {                                            \
    using namespace linea::testing;                                                                           \
    const case_shape one{.B = 6, .T = 1, .H = 2, .HV = 4, .K = 64, .V = 48, .initial_state = true, .seed = 5}; \
    check_against_reference<linea::rule, linea::read::identity, cuda_step, float>(one);                     \
    check_against_reference<linea::rule, linea::read::identity, cuda_step, linea::bf16>(one);                      \
    check_against_reference<linea::rule, linea::read::ccq<linea::read::decayed>, cuda_step, float>(          \
        one, {.initial_stats = true});                                                                        \
    check_step_pool<linea::rule, float>();                                                                    \
    check_step_pool<linea::rule, linea::bf16>();                                                                     \
  }
