// The decode step (linea::step): one token per batch row over a pool of states, in place; on the default CPU
// backend (SIMD kernels) and on backend::generic (the plain loops of forms/recurrent_head.hpp).
#include <algorithm>
#include <vector>

#include <doctest/doctest.h>

#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/outputs.hpp"
#include "support/rules.hpp"
#include "support/slice.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

template <class Rule, class Backend, class T>
void check_steps_equal_recurrent() {
  const index_t Tn = 40;
  auto c = random_case<Rule, T>::make({.B = 3, .T = Tn, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true});
  auto whole = c.template cast<T>();
  recurrent<Rule>(whole.args());

  auto pool = c.h0;  // the state pool, updated in place: initial_state and final_state are one buffer
  for (index_t t = 0; t < Tn; ++t) {
    auto a = time_slice_args(c.args(), t, t + 1);
    a.initial_state = pool;
    a.final_state = pool;
    step<Rule, read::identity, Backend>(a);
  }
  INFO(std::string(rule_name<Rule>::value));
  const double tol = tolerance_for<T>(Tn);
  CHECK(relative_error(c.o, whole.o) <= tol);
  CHECK(relative_error(c.residual, whole.residual) <= tol);
  CHECK(relative_error(pool, whole.ht) <= tol);
}

// One row's expected decode result: the float64 reference on batch row b alone, from pool row n.
template <class Rule, class T, class S>
outputs<double> expected_row(random_case<Rule, T>& c, const tensor<S, 4>& pool, index_t b, index_t n) {
  auto ref = c.template cast<double>();
  auto a = ref.args();
  a.q = row_slice(a.q, b, b + 1), a.k = row_slice(a.k, b, b + 1), a.v = row_slice(a.v, b, b + 1);
  a.g = row_slice(a.g, b, b + 1), a.gk = row_slice(a.gk, b, b + 1), a.beta = row_slice(a.beta, b, b + 1);
  a.b = row_slice(a.b, b, b + 1), a.w = row_slice(a.w, b, b + 1);
  tensor<double, 4> h0({1, pool.extent(1), pool.extent(2), pool.extent(3)});
  for (index_t h = 0; h < pool.extent(1); ++h)
    for (index_t i = 0; i < pool.extent(2); ++i)
      for (index_t j = 0; j < pool.extent(3); ++j) h0(0, h, i, j) = pool(n, h, i, j);
  a.initial_state = h0;
  return run_into<Rule, backend::reference>(a);
}

// Pool entries of row n equal `want` (row 0 of a [1, HV, K, V] tensor).
template <class S>
double pool_row_error(const tensor<S, 4>& pool, index_t n, const tensor<double, 4>& want) {
  const std::size_t row = want.size();
  return relative_error(pool.data() + n * static_cast<index_t>(row), want.data(), row);
}

template <class Rule, class Backend, class T>
void check_state_indices(bool in_place) {
  using S = accumulate_t<T>;
  const index_t B = 4, Npool = 6, HV = 4, K = 16, V = 8;
  auto c = random_case<Rule, T>::make({.B = B, .T = 1, .H = 2, .HV = HV, .K = K, .V = V, .seed = 77});
  tensor<S, 4> pool({Npool, HV, K, V});
  {
    auto r = random_case<Rule, T>::make({.B = Npool, .T = 1, .H = 2, .HV = HV, .K = K, .V = V,
                                         .initial_state = true, .seed = 78});
    pool = r.h0;
  }
  const tensor<S, 4> before = pool;
  tensor<S, 4> out({Npool, HV, K, V}, S(sentinel));  // used when not in place
  const std::vector<std::int32_t> idx = {3, -1, 0, 5};  // rows 1, 2, 4 of the pool are not referenced

  std::fill(c.o.values().begin(), c.o.values().end(), T(sentinel));
  std::fill(c.residual.values().begin(), c.residual.values().end(), T(sentinel));
  auto a = c.args();
  a.initial_state = pool;
  a.final_state = in_place ? pool.view_of() : out.view_of();
  a.state_indices = idx;
  step<Rule, read::identity, Backend>(a);

  INFO(std::string(rule_name<Rule>::value), std::string(in_place ? " in place" : " separate final_state"));
  const tensor<S, 4>& written = in_place ? pool : out;
  const index_t row = HV * V;  // one batch row of o
  for (index_t b = 0; b < B; ++b) {
    CAPTURE(b);
    if (idx[b] < 0) {
      for (index_t e = 0; e < row; ++e) CHECK(c.o.data()[b * row + e] == T(0));
      for (index_t e = 0; e < row; ++e) CHECK(c.residual.data()[b * row + e] == T(0));
      continue;
    }
    const auto want = expected_row(c, before, b, idx[b]);
    CHECK(relative_error(c.o.data() + b * row, want.o.data(), static_cast<std::size_t>(row)) <= tolerance_for<T>());
    CHECK(relative_error(c.residual.data() + b * row, want.residual.data(), static_cast<std::size_t>(row)) <=
          tolerance_for<T>());
    CHECK(pool_row_error(written, idx[b], want.final_state) <= tolerance_for<T>());
  }
  // Unreferenced rows are neither read nor written.
  const index_t srow = HV * K * V;
  for (index_t n : {1, 2, 4}) {
    CAPTURE(n);
    if (in_place)
      CHECK(relative_error(pool.data() + n * srow, before.data() + n * srow, static_cast<std::size_t>(srow)) == 0.0);
    else
      CHECK(std::all_of(out.data() + n * srow, out.data() + (n + 1) * srow, [](S x) { return x == S(sentinel); }));
  }
  if (!in_place) CHECK(relative_error(pool, before) == 0.0);  // the initial pool is only read
}

}  // namespace

TEST_CASE_TEMPLATE("step: T decode steps in place equal one recurrent call (float32)", Rule, LINEA_ALL_RULES) {
  check_steps_equal_recurrent<Rule, backend::cpu, float>();
  check_steps_equal_recurrent<Rule, backend::generic, float>();
}

TEST_CASE_TEMPLATE("step: T decode steps in place equal one recurrent call (float64)", Rule, LINEA_ALL_RULES) {
  check_steps_equal_recurrent<Rule, backend::cpu, double>();
  check_steps_equal_recurrent<Rule, backend::generic, double>();
}

TEST_CASE_TEMPLATE("step: state_indices permute the pool, -1 skips the row (output zero, state untouched)", Rule,
                   LINEA_ALL_RULES) {
  SUBCASE("cpu") {
    check_state_indices<Rule, backend::cpu, float>(true);
    check_state_indices<Rule, backend::cpu, float>(false);
    check_state_indices<Rule, backend::cpu, double>(true);
  }
  SUBCASE("generic") {
    check_state_indices<Rule, backend::generic, float>(true);
    check_state_indices<Rule, backend::generic, float>(false);
    check_state_indices<Rule, backend::generic, double>(true);
  }
}

TEST_CASE("step: without any state, rows start from zero and write nothing else") {
  auto c = random_case<delta, float>::make({.B = 2, .T = 1, .H = 1, .HV = 2, .K = 8, .V = 8});
  auto ref = c.cast<double>();
  reference::recurrent<delta>(ref.args());
  auto a = c.args();
  a.final_state = {};
  step<delta>(a);
  CHECK(relative_error(c.o, ref.o) <= tolerance_for<float>());
}
