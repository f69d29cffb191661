// CPU backend decode step against the float64 reference: one token per batch row through a state pool with
// state_indices (in place, skipped rows), every rule, 1 and 2 threads; the recurrent form run token by token
// must equal one recurrent call.
#include <doctest/doctest.h>

#include <numeric>

#include "support/rules.hpp"
#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

TEST_CASE_TEMPLATE("cpu backend: decode step over a state pool matches the float64 reference", Rule, LINEA_ALL_RULES) {
  // Batch of 6 rows over a pool of 5 states: rows use states {3, 0, -1, 4, 1, 2}; row 2 is skipped.
  const std::vector<std::int32_t> idx = {3, 0, -1, 4, 1, 2};
  auto c = random_case<Rule, float>::make({.B = 6, .T = 1, .H = 2, .HV = 4, .K = 24, .V = 40, .seed = 11});
  auto pool = random_case<Rule, float>::make({.B = 5, .T = 1, .H = 2, .HV = 4, .K = 24, .V = 40, .initial_state = true,
                                              .seed = 12});
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    tensor<float, 4> states = pool.h0;  // updated in place
    auto a = c.args();
    a.initial_state = states.view_of();
    a.final_state = states.view_of();
    a.state_indices = idx;
    a.threads = threads;
    std::fill(c.o.values().begin(), c.o.values().end(), 7.0f);  // the skipped row must be overwritten with zeros
    std::fill(c.residual.values().begin(), c.residual.values().end(), 7.0f);
    step<Rule>(a);

    // Truth: each used row is a one-token recurrent call of the float64 reference from its pool state.
    auto ref = c.template cast<double>();
    auto ref_pool = pool.template cast<double>();
    tensor<double, 4> want_states = ref_pool.h0;
    tensor<double, 4> want_o({6, 1, 4, 40});
    for (std::size_t b = 0; b < idx.size(); ++b) {
      if (idx[b] < 0) continue;
      auto one = random_case<Rule, double>::make({.B = 1, .T = 1, .H = 2, .HV = 4, .K = 24, .V = 40});
      auto copy_row = [&](auto& from, auto& to) {
        if (!from.size()) return;
        const std::size_t n = from.size() / 6;
        std::copy(from.data() + b * n, from.data() + (b + 1) * n, to.data());
      };
      copy_row(ref.q, one.q), copy_row(ref.k, one.k), copy_row(ref.v, one.v), copy_row(ref.g, one.g);
      copy_row(ref.gk, one.gk), copy_row(ref.beta, one.beta), copy_row(ref.b, one.b), copy_row(ref.w, one.w);
      one.h0 = tensor<double, 4>({1, 4, 24, 40});
      const std::size_t ns = one.h0.size();
      std::copy(ref_pool.h0.data() + idx[b] * ns, ref_pool.h0.data() + (idx[b] + 1) * ns, one.h0.data());
      reference::recurrent<Rule>(one.args());
      std::copy(one.ht.data(), one.ht.data() + ns, want_states.data() + idx[b] * ns);
      std::copy(one.o.data(), one.o.data() + one.o.size(), want_o.data() + b * one.o.size());
    }
    CHECK(relative_error(states, want_states) <= tolerance_for<float>());
    CHECK(relative_error(c.o, want_o) <= tolerance_for<float>());
    for (index_t j = 0; j < 40; ++j) {  // the skipped row's output and residual are zero
      CHECK(c.o(2, 0, 1, j) == 0.0f);
      CHECK(c.residual(2, 0, 3, j) == 0.0f);
    }
  }
}

TEST_CASE_TEMPLATE("cpu backend: recurrent token by token through step equals one recurrent call", Rule, gla, kda,
                   gdn2) {
  auto c = random_case<Rule, float>::make({.B = 1, .T = 40, .H = 1, .HV = 2, .K = 32, .V = 32, .initial_state = true});
  auto whole = c;
  recurrent<Rule>(whole.args());
  tensor<float, 4> states = c.h0;
  tensor<float, 4> o({1, 40, 2, 32});
  for (index_t t = 0; t < 40; ++t) {
    arguments<float> a;
    a.q = strided<4>(c.q.data() + t * 32, {1, 1, 1, 32}, {0, 0, 32, 1});
    a.k = strided<4>(c.k.data() + t * 32, {1, 1, 1, 32}, {0, 0, 32, 1});
    a.v = strided<4>(c.v.data() + t * 64, {1, 1, 2, 32}, {0, 0, 32, 1});
    if (c.gk.size()) a.gk = strided<4>(c.gk.data() + t * 64, {1, 1, 2, 32}, {0, 0, 32, 1});
    if (c.beta.size()) a.beta = strided<3>(c.beta.data() + t * 2, {1, 1, 2}, {0, 0, 1});
    if (c.b.size()) a.b = strided<4>(c.b.data() + t * 64, {1, 1, 2, 32}, {0, 0, 32, 1});
    if (c.w.size()) a.w = strided<4>(c.w.data() + t * 64, {1, 1, 2, 32}, {0, 0, 32, 1});
    a.initial_state = states.view_of();
    a.final_state = states.view_of();
    a.o = strided<4>(o.data() + t * 64, {1, 1, 2, 32}, {0, 0, 32, 1});
    step<Rule>(a);
  }
  CHECK(relative_error(o, whole.o) <= tolerance_for<float>());
  CHECK(relative_error(states, whole.ht) <= tolerance_for<float>());
}
