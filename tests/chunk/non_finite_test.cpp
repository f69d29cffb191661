// Gates of exactly 0 and non-finite inputs (issue #13): a log decay of −inf at any token (the first, mid-chunk, on
// a chunk boundary, the last) gives every CPU form (recurrent, chunkwise at two chunk sizes, the decode step; cpu and
// generic backends; identity and CCQ reads) the float64 reference's result within SPEC §5, and a NaN or Inf input
// at token t poisons exactly the entries the reference poisons: the tokens before t stay finite.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <linea/forms/chunkwise.hpp>

#include "read/ccq_inputs.hpp"
#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/rules.hpp"
#include "support/slice.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

constexpr double neg_inf = -std::numeric_limits<double>::infinity();

template <class Rule>
constexpr bool gated = reads(Rule::inputs, input::g) || reads(Rule::inputs, input::gk);

// Log decay −inf at token t of batch row b, value head hv: the scalar gate, or channel `channel` of gk (every
// channel when channel < 0).
template <class Rule, class T>
void zero_gate(random_case<Rule, T>& c, index_t b, index_t t, index_t hv, index_t channel = -1) {
  if constexpr (reads(Rule::inputs, input::g)) {
    c.g(b, t, hv) = T(neg_inf);
  } else {
    for (index_t i = 0; i < c.shape.K; ++i)
      if (channel < 0 || i == channel) c.gk(b, t, hv, i) = T(neg_inf);
  }
}

// The decode step token by token, in place on one state buffer (final_state == initial_state).
template <class Rule, class Backend, class T, class S>
void step_through(arguments<T, S> a, tensor<S, 4>& state, const tensor<S, 4>* h0) {
  state = h0 ? *h0 : tensor<S, 4>(state.extents());
  a.initial_state = state, a.final_state = state;
  for (index_t t = 0; t < a.q.extent(1); ++t) step<Rule, read::identity, Backend>(time_slice_args(a, t, t + 1));
}

// Every CPU form on case c (identity read) against reference output `ref`: o and the final state within tolerance.
template <class Rule>
void check_every_form(const random_case<Rule, float>& c0, const random_case<Rule, double>& ref) {
  const double tol = tolerance_for<float>(c0.shape.T);
  auto check = [&](const random_case<Rule, float>& x, const std::string& form) {
    INFO(form);
    CHECK(all_finite(x.o));
    CHECK(all_finite(x.ht));
    CHECK(relative_error(x.o, ref.o) <= tol);
    CHECK(relative_error(x.ht, ref.ht) <= tol);
  };
  {
    auto x = c0;
    recurrent<Rule, read::identity, backend::cpu>(x.args());
    check(x, "recurrent cpu");
  }
  {
    auto x = c0;
    recurrent<Rule, read::identity, backend::generic>(x.args());
    check(x, "recurrent generic");
  }
  for (index_t C : {16, 64}) {
    auto x = c0;
    auto a = x.args();
    a.chunk_size = C;
    chunkwise<Rule, read::identity, backend::cpu>(a);
    check(x, "chunkwise cpu C=" + std::to_string(C));
    auto y = c0;
    auto b = y.args();
    b.chunk_size = C;
    chunkwise<Rule, read::identity, backend::generic>(b);
    check(y, "chunkwise generic C=" + std::to_string(C));
  }
  if (c0.shape.seqlens.empty()) {
    auto x = c0;
    auto a = x.args();
    a.residual = {};
    step_through<Rule, backend::cpu>(a, x.ht, c0.shape.initial_state ? &c0.h0 : nullptr);
    check(x, "step cpu (in place)");
  }
}

struct zero_placement {
  const char* name;
  std::vector<index_t> tokens;
  index_t channel;  // per-key gates: the channel set to −inf (−1: every channel)
};

}  // namespace

TEST_CASE_TEMPLATE("a log decay of -inf at any token: every CPU form equals the reference", Rule, LINEA_ALL_RULES) {
  if constexpr (gated<Rule>) {
    const index_t T = 100;
    const std::vector<zero_placement> placements = {
        {"first token", {0}, -1},
        {"mid-chunk", {37}, -1},
        {"either side of a chunk boundary", {63, 64}, -1},
        {"last token", {T - 1}, -1},
        {"a run and a boundary", {15, 16, 17, 31, 32, 48}, -1},
        {"one key channel, mid-chunk", {5, 37}, 3},
    };
    for (const auto& z : placements) {
      const case_shape s{.B = 2, .T = T, .H = 1, .HV = 2, .K = 16, .V = 8, .initial_state = true, .seed = 7};
      auto c = random_case<Rule, float>::make(s);
      for (index_t t : z.tokens) zero_gate(c, 1, t, 1, z.channel), zero_gate(c, 0, t, 0, z.channel);
      auto ref = c.template cast<double>();
      reference::recurrent<Rule>(ref.args());
      INFO(rule_name<Rule>::value, ": ", z.name);
      REQUIRE(all_finite(ref.o));
      check_every_form<Rule>(c, ref);
    }
  }
}

TEST_CASE_TEMPLATE("a log decay of -inf in packed sequences: every CPU form equals the reference", Rule, gla,
                   gated_delta) {
  const case_shape s{.T = 0, .H = 1, .HV = 2, .K = 16, .V = 8, .seqlens = {40, 17, 33}, .initial_state = true};
  auto c = random_case<Rule, float>::make(s);
  for (index_t t : {0, 39, 40, 56, 70, 89}) zero_gate(c, 0, t, 1), zero_gate(c, 0, t, 0, 2);
  auto ref = c.template cast<double>();
  reference::recurrent<Rule>(ref.args());
  check_every_form<Rule>(c, ref);
}

TEST_CASE_TEMPLATE("a log decay of -inf with the CCQ read: chunkwise equals the reference", Rule, simple_gla, gla, kda,
                   gated_delta) {
  using ccq_decayed = read::ccq<read::decayed>;
  const case_shape s{.B = 1, .T = 90, .H = 1, .HV = 2, .K = 16, .V = 8, .initial_state = true, .seed = 11};
  for (bool explicit_decay : {false, true}) {
    auto c = random_case<Rule, float>::make(s);
    for (index_t t : {0, 20, 31, 32, 89}) zero_gate(c, 0, t, 1), zero_gate(c, 0, t + (t < 89), 0, 5);
    auto st = ccq_tensors<float>::make(s, c.N, {.initial_stats = true, .explicit_log_decay = explicit_decay});
    if (explicit_decay)
      for (index_t t : {3, 32, 33, 60}) st.log_decay(0, t, 1) = -std::numeric_limits<float>::infinity();
    auto ref = c.template cast<double>();
    auto sref = st.template cast<double>();
    auto ar = ref.args();
    sref.attach(ar);
    reference::recurrent<Rule, ccq_decayed>(ar);
    REQUIRE(all_finite(ref.o));
    for (index_t C : {16, 64}) {
      auto x = c;
      auto sx = st;
      auto a = x.args();
      sx.attach(a);
      a.chunk_size = C;
      chunkwise<Rule, ccq_decayed>(a);
      INFO(rule_name<Rule>::value, " C=", C, explicit_decay ? " explicit ccq.log_decay" : " rule's decay");
      const double tol = tolerance_for<float>(s.T);
      CHECK(all_finite(x.o));
      CHECK(relative_error(x.o, ref.o) <= tol);
      CHECK(relative_error(x.ht, ref.ht) <= tol);
      CHECK(relative_error(sx.C, sref.C) <= tol);
      CHECK(relative_error(sx.q_tilde, sref.q_tilde) <= tol);
    }
  }
}

namespace {

// Entry by entry: x is finite exactly where ref is.
template <class X, class R, int Rank>
bool same_finite_pattern(const tensor<X, Rank>& x, const tensor<R, Rank>& ref) {
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::isfinite(double(x.data()[i])) != std::isfinite(double(ref.data()[i]))) return false;
  return true;
}

// Tokens [0, t) of o, every batch row and head: finite.
template <class X>
bool finite_before(const tensor<X, 4>& o, index_t t) {
  for (index_t b = 0; b < o.extent(0); ++b)
    for (index_t s = 0; s < t; ++s)
      for (index_t h = 0; h < o.extent(2); ++h)
        for (index_t j = 0; j < o.extent(3); ++j)
          if (!std::isfinite(double(o(b, s, h, j)))) return false;
  return true;
}

}  // namespace

TEST_CASE_TEMPLATE("a NaN or Inf input poisons only what the recurrence poisons", Rule, LINEA_ALL_RULES) {
  const case_shape s{.B = 1, .T = 80, .H = 1, .HV = 2, .K = 16, .V = 8, .initial_state = true, .seed = 5};
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  struct poison {
    const char* name;
    index_t t;
    float value;
    bool in_value;  // v (one value channel) or k (one key channel)
  };
  for (const poison& p : {poison{"NaN in v mid-chunk", 37, nan, true}, poison{"NaN in k at a boundary", 48, nan, false},
                          poison{"Inf in v", 21, inf, true}, poison{"NaN in v at the last token", 79, nan, true}}) {
    auto c = random_case<Rule, float>::make(s);
    if (p.in_value) c.v(0, p.t, 1, 2) = p.value;
    else c.k(0, p.t, 0, 4) = p.value;
    auto ref = c.template cast<double>();
    reference::recurrent<Rule>(ref.args());
    for (index_t C : {16, 64}) {
      auto x = c;
      auto a = x.args();
      a.chunk_size = C;
      chunkwise<Rule>(a);
      INFO(rule_name<Rule>::value, ": ", p.name, " C=", C);
      CHECK(finite_before(x.o, p.t));
      CHECK(same_finite_pattern(x.o, ref.o));
    }
    auto x = c;
    recurrent<Rule>(x.args());
    INFO(rule_name<Rule>::value, ": ", p.name, " recurrent");
    CHECK(finite_before(x.o, p.t));
    CHECK(same_finite_pattern(x.o, ref.o));
  }
}
