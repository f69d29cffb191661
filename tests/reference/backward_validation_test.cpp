// Validation of linea::reference::backward: every bad gradient argument is a linea::error naming it (and the shapes
// where they are the problem), thrown before any gradient is written.
#include <algorithm>
#include <limits>
#include <string>

#include <doctest/doctest.h>
#include <linea/linea.hpp>
#include <linea/reference/backward.hpp>

#include "read/ccq_inputs.hpp"
#include "support/inputs.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

const case_shape base{.B = 2, .T = 6, .H = 2, .HV = 4, .K = 8, .V = 4, .initial_state = true};
constexpr float sentinel = 1234.5f;

// A case with every gradient output of its rule, pre-filled with a sentinel.
template <class Rule>
struct grad_case {
  random_case<Rule, float> c = random_case<Rule, float>::make(base);
  tensor<float, 4> d_o{c.o.extents()}, dq{c.q.extents(), sentinel}, dk{c.k.extents(), sentinel},
      dv{c.v.extents(), sentinel}, dgk{{2, 6, 4, 8}, sentinel}, wrong4{{2, 6, 4, 5}};
  tensor<float, 3> dg{{2, 6, 4}, sentinel}, dbeta{{2, 6, 4}, sentinel}, lam{{2, 6, 4}};
  tensor<float, 4> dht{c.ht.extents()};
  tensor<float, 1> dA{{4}};

  gradients<float> grads() { return {.d_o = d_o, .d_final_state = dht, .dq = dq, .dk = dk, .dv = dv}; }
  bool untouched() const {
    for (const auto* t : {&dq, &dk, &dv})
      if (!std::all_of(t->values().begin(), t->values().end(), [](float e) { return e == sentinel; })) return false;
    return true;
  }
};

template <class Rule, class Read = read::identity, class C, class A, class G>
void expect_rejected(C& c, const A& a, const G& g, std::initializer_list<std::string> words) {
  std::string message;
  try {
    reference::backward<Rule, Read>(a, g);
  } catch (const linea::error& e) {
    message = e.what();
  }
  INFO("message: ", message);
  REQUIRE_MESSAGE(!message.empty(), "no linea::error was thrown");
  for (const auto& w : words) CHECK_MESSAGE(message.find(w) != std::string::npos, "missing word: ", w);
  CHECK(c.untouched());
}

}  // namespace

TEST_CASE("reference backward rejects: missing or misshaped d_o, d_final_state") {
  grad_case<gated_delta> c;
  auto a = c.c.args();
  auto g = c.grads();
  g.d_o = {};
  expect_rejected<gated_delta>(c, a, g, {"'d_o'", "missing"});
  g = c.grads();
  g.d_o = c.wrong4;
  expect_rejected<gated_delta>(c, a, g, {"'d_o'", "[2, 6, 4, 5]", "[2, 6, 4, 4]"});
  g = c.grads();
  g.d_final_state = c.wrong4;
  expect_rejected<gated_delta>(c, a, g, {"'d_final_state'", "[2, 4, 8, 4]"});
}

TEST_CASE("reference backward rejects: misshaped dq, dk, dv; a null pointer") {
  grad_case<kda> c;
  auto a = c.c.args();
  auto g = c.grads();
  g.dv = c.wrong4;
  expect_rejected<kda>(c, a, g, {"'dv'", "[2, 6, 4, 5]"});
  g = c.grads();
  g.dk = c.dv;  // [2, 6, 4, 4] where [2, 6, 2, 8] is expected
  expect_rejected<kda>(c, a, g, {"'dk'", "[2, 6, 2, 8]"});
  g = c.grads();
  g.dq.ptr = nullptr;
  expect_rejected<kda>(c, a, g, {"'dq'", "null"});
  // Views that cannot describe memory (core/validate.hpp's expect_data): the byte ranges of the gradients'
  // aliasing checks would wrap around.
  g = c.grads();
  g.dv.str[1] = index_t(1) << 61;
  expect_rejected<kda>(c, a, g, {"'dv'", "[2, 6, 4, 4]", "address space"});
  g = c.grads();
  g.d_o.str[0] = -(index_t(1) << 62);
  expect_rejected<kda>(c, a, g, {"'d_o'", "address space"});
  // A pointer off its element's alignment (expect_data), a gradient's and an upstream gradient's.
  g = c.grads();
  g.dq.ptr = misaligned(g.dq.ptr, 2);
  expect_rejected<kda>(c, a, g, {"'dq'", "[2, 6, 2, 8]", "alignment"});
  g = c.grads();
  g.d_o.ptr = misaligned(g.d_o.ptr, 1);
  expect_rejected<kda>(c, a, g, {"'d_o'", "alignment"});
}

TEST_CASE("reference backward rejects: a gradient of an input the forward does not have") {
  SUBCASE("dg of a per-key rule, dgk of a scalar one") {
    grad_case<kda> c;
    auto g = c.grads();
    g.dg = c.dg;
    expect_rejected<kda>(c, c.c.args(), g, {"'dg'", "no scalar gate"});
    grad_case<gated_delta> s;
    auto gs = s.grads();
    gs.dgk = s.dgk;
    expect_rejected<gated_delta>(s, s.c.args(), gs, {"'dgk'", "no per-key gate"});
  }
  SUBCASE("dbeta without beta, dA_log without an in-kernel gate") {
    grad_case<gla> c;
    auto g = c.grads();
    g.dbeta = c.dbeta;
    expect_rejected<gla>(c, c.c.args(), g, {"'dbeta'", "no beta"});
    g = c.grads();
    g.dA_log = linea::view<float, 1>(c.dA);
    expect_rejected<gla>(c, c.c.args(), g, {"'dA_log'", "gate.A_log"});
  }
  SUBCASE("CCQ gradients with the identity read; dccq_log_decay without ccq.log_decay") {
    grad_case<gated_delta> c;
    auto g = c.grads();
    g.dlambda = c.dbeta;
    expect_rejected<gated_delta>(c, c.c.args(), g, {"'dlambda'", "CCQ"});
    auto a = c.c.args();
    a.ccq.lambda = c.lam;
    g = c.grads();
    g.dccq_log_decay = c.dbeta;
    expect_rejected<gated_delta, read::ccq<read::decayed>>(c, a, g, {"'dccq_log_decay'", "ccq.log_decay"});
  }
}

TEST_CASE("reference backward rejects: the forward's own errors and decode-step arguments") {
  grad_case<delta> c;
  auto a = c.c.args();
  a.beta = {};
  expect_rejected<delta>(c, a, c.grads(), {"'beta'", "missing"});
  a = c.c.args();
  std::vector<std::int32_t> index{0, 1};
  a.state_indices = index;
  expect_rejected<delta>(c, a, c.grads(), {"'state_indices'"});
}

TEST_CASE("reference backward: o may be left out (the backward reads no forward output)") {
  auto c = random_case<gdn2, double>::make(base);
  tensor<double, 4> d_o(c.o.extents(), 0.5), dq1(c.q.extents()), dq2(c.q.extents());
  auto a = c.args();
  reference::backward<gdn2>(a, gradients<double>{.d_o = d_o, .dq = dq1});
  a.o = {};
  reference::backward<gdn2>(a, gradients<double>{.d_o = d_o, .dq = dq2});
  CHECK(dq1.values() == dq2.values());
}
