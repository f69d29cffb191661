// Layouts are only strides: outputs written through head-first views, states read and written through
// transposed ([N, HV, V, K] memory) views, and a g view with stride 0 give the same numbers as the
// contiguous run, on every host backend.
#include <doctest/doctest.h>

#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/outputs.hpp"
#include "support/rules.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

TEST_CASE_TEMPLATE("views: head-first outputs and transposed states equal the contiguous layout", Rule,
                   LINEA_ALL_RULES) {
  const index_t B = 2, T = 33, H = 2, HV = 4, K = 16, V = 8;
  auto c = random_case<Rule, float>::make({.B = B, .T = T, .H = H, .HV = HV, .K = K, .V = V, .initial_state = true,
                                           .head_first = true});
  for_each_backend([&]<class Backend>() {
    const auto want = run_into<Rule, Backend>(c.args());

    // o and residual stored [B, HV, T, V]; states stored [N, HV, V, K].
    tensor<float, 4> o_hf({B, HV, T, V}, float(sentinel)), u_hf({B, HV, T, V}, float(sentinel));
    tensor<float, 4> h0_t({B, HV, V, K}), ht_t({B, HV, V, K}, float(sentinel));
    for (index_t n = 0; n < B; ++n)
      for (index_t h = 0; h < HV; ++h)
        for (index_t i = 0; i < K; ++i)
          for (index_t j = 0; j < V; ++j) h0_t(n, h, j, i) = c.h0(n, h, i, j);
    auto a = c.args();
    a.o = strided<4>(o_hf.data(), {B, T, HV, V}, {HV * T * V, V, T * V, 1});
    a.residual = strided<4>(u_hf.data(), {B, T, HV, V}, {HV * T * V, V, T * V, 1});
    a.initial_state = strided<4>(static_cast<const float*>(h0_t.data()), {B, HV, K, V}, {HV * V * K, V * K, 1, K});
    a.final_state = strided<4>(ht_t.data(), {B, HV, K, V}, {HV * V * K, V * K, 1, K});
    recurrent<Rule, read::identity, Backend>(a);

    double err_o = 0, err_u = 0, err_s = 0;
    for (index_t b = 0; b < B; ++b)
      for (index_t t = 0; t < T; ++t)
        for (index_t h = 0; h < HV; ++h)
          for (index_t j = 0; j < V; ++j) {
            err_o = std::max(err_o, std::fabs(double(o_hf(b, h, t, j)) - double(want.o(b, t, h, j))));
            err_u = std::max(err_u, std::fabs(double(u_hf(b, h, t, j)) - double(want.residual(b, t, h, j))));
          }
    for (index_t n = 0; n < B; ++n)
      for (index_t h = 0; h < HV; ++h)
        for (index_t i = 0; i < K; ++i)
          for (index_t j = 0; j < V; ++j)
            err_s = std::max(err_s, std::fabs(double(ht_t(n, h, j, i)) - double(want.final_state(n, h, i, j))));
    // The same arithmetic in another layout: equal up to rounding of the same operations.
    CHECK(err_o <= tolerance_for<float>());
    CHECK(err_u <= tolerance_for<float>());
    CHECK(err_s <= tolerance_for<float>());
  });
}

TEST_CASE("views: a decode step over a state pool that is a strided slice of a larger buffer") {
  // Pool rows live every other row of a [2N, HV, K, V] buffer; the rows in between must stay untouched.
  const index_t B = 3, HV = 2, K = 8, V = 8, N = 3;
  auto c = random_case<kda, float>::make({.B = B, .T = 1, .H = 1, .HV = HV, .K = K, .V = V, .initial_state = true});
  auto want = c.cast<double>();
  reference::recurrent<kda>(want.args());
  tensor<float, 4> big({2 * N, HV, K, V}, float(sentinel));
  for (index_t n = 0; n < N; ++n)
    for (index_t h = 0; h < HV; ++h)
      for (index_t i = 0; i < K; ++i)
        for (index_t j = 0; j < V; ++j) big(2 * n, h, i, j) = c.h0(n, h, i, j);
  auto pool = strided<4>(big.data(), {N, HV, K, V}, {2 * HV * K * V, K * V, V, 1});
  auto a = c.args();
  a.initial_state = pool;
  a.final_state = pool;
  step<kda>(a);
  CHECK(relative_error(c.o, want.o) <= tolerance_for<float>());
  double err = 0;
  bool gaps_untouched = true;
  for (index_t n = 0; n < N; ++n)
    for (index_t h = 0; h < HV; ++h)
      for (index_t i = 0; i < K; ++i)
        for (index_t j = 0; j < V; ++j) {
          err = std::max(err, std::fabs(double(big(2 * n, h, i, j)) - want.ht(n, h, i, j)));
          gaps_untouched = gaps_untouched && big(2 * n + 1, h, i, j) == float(sentinel);
        }
  CHECK(err <= tolerance_for<float>());
  CHECK(gaps_untouched);
}
