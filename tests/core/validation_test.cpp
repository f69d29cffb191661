// Every validation error, one TEST_CASE each: a linea::error is thrown before anything is written, and its
// message names the argument (and the shapes where they are the problem). Outputs o, residual and
// final_state are pre-filled with a sentinel and must come back untouched. Recurrent-form errors are
// checked on backend::cpu, backend::generic and backend::reference; decode-step errors on cpu and generic.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/outputs.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

// B = 2, T = 10, H = 2, HV = 4, K = 16, V = 8: every shape in a message is recognisable.
const case_shape base{.B = 2, .T = 10, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true};

template <class Rule>
random_case<Rule, float> make_case(case_shape s = base) {
  auto c = random_case<Rule, float>::make(s);
  std::fill(c.o.values().begin(), c.o.values().end(), float(sentinel));
  std::fill(c.residual.values().begin(), c.residual.values().end(), float(sentinel));
  std::fill(c.ht.values().begin(), c.ht.values().end(), float(sentinel));
  return c;
}

template <class X, int R>
bool untouched(const tensor<X, R>& x) {
  return std::all_of(x.values().begin(), x.values().end(), [](X e) { return e == X(sentinel); });
}

// Runs `call`, expects a linea::error whose message contains every word, and the case's outputs untouched.
template <class C, class F>
void expect_rejected(C& c, F&& call, std::initializer_list<std::string> words) {
  std::string message;
  try {
    call();
  } catch (const linea::error& e) {
    message = e.what();
  }
  INFO("message: ", message);
  REQUIRE_MESSAGE(!message.empty(), "no linea::error was thrown");
  for (const std::string& w : words) {
    INFO("expected in the message: ", w);
    CHECK(message.find(w) != std::string::npos);
  }
  CHECK(untouched(c.o));
  CHECK(untouched(c.residual));
  CHECK(untouched(c.ht));
}

// The recurrent form on every host backend.
template <class Rule, class C>
void expect_recurrent_rejected(C& c, const arguments<float>& a, std::initializer_list<std::string> words) {
  expect_rejected(c, [&] { recurrent<Rule, read::identity, backend::cpu>(a); }, words);
  expect_rejected(c, [&] { recurrent<Rule, read::identity, backend::generic>(a); }, words);
  expect_rejected(c, [&] { recurrent<Rule, read::identity, backend::reference>(a); }, words);
}

template <class Rule, class C>
void expect_step_rejected(C& c, const arguments<float>& a, std::initializer_list<std::string> words) {
  expect_rejected(c, [&] { step<Rule, read::identity, backend::cpu>(a); }, words);
  expect_rejected(c, [&] { step<Rule, read::identity, backend::generic>(a); }, words);
}

template <class T, int R>
view<T, R> with_extent(view<T, R> x, int axis, index_t extent) {
  x.ext[axis] = extent;
  return x;
}

}  // namespace

// ---- mismatched shapes -------------------------------------------------------------------------------------

TEST_CASE("validate: k with another shape than q") {
  auto c = make_case<kda>();
  auto a = c.args();
  a.k = with_extent(a.k, 3, 15);
  expect_recurrent_rejected<kda>(c, a, {"'k'", "[2, 10, 2, 15]", "[2, 10, 2, 16]"});
}

TEST_CASE("validate: v with another T than q") {
  auto c = make_case<kda>();
  auto a = c.args();
  a.v = with_extent(a.v, 1, 9);
  expect_recurrent_rejected<kda>(c, a, {"'v'", "[2, 9, 4, 8]", "[2, 10, 2, 16]"});
}

TEST_CASE("validate: o with another shape than v") {
  auto c = make_case<kda>();
  auto a = c.args();
  a.o = with_extent(a.o, 3, 7);
  expect_recurrent_rejected<kda>(c, a, {"'o'", "[2, 10, 4, 7]", "[2, 10, 4, 8]"});
}

TEST_CASE("validate: g with the wrong number of heads") {
  auto c = make_case<gated_delta>();
  auto a = c.args();
  a.g = with_extent(a.g, 2, 2);
  expect_recurrent_rejected<gated_delta>(c, a, {"'g'", "[2, 10, 2]", "[2, 10, 4]"});
}

TEST_CASE("validate: gk with the wrong key width") {
  auto c = make_case<kda>();
  auto a = c.args();
  a.gk = with_extent(a.gk, 3, 8);
  expect_recurrent_rejected<kda>(c, a, {"'gk'", "[2, 10, 4, 8]", "[2, 10, 4, 16]"});
}

TEST_CASE("validate: beta with the wrong length") {
  auto c = make_case<delta>();
  auto a = c.args();
  a.beta = with_extent(a.beta, 1, 5);
  expect_recurrent_rejected<delta>(c, a, {"'beta'", "[2, 5, 4]", "[2, 10, 4]"});
}

TEST_CASE("validate: GDN-2 erase gate b with the wrong width") {
  auto c = make_case<gdn2>();
  auto a = c.args();
  a.b = with_extent(a.b, 3, 8);
  expect_recurrent_rejected<gdn2>(c, a, {"'b'", "[2, 10, 4, 8]", "[2, 10, 4, 16]"});
}

TEST_CASE("validate: GDN-2 write gate w with the wrong width") {
  auto c = make_case<gdn2>();
  auto a = c.args();
  a.w = with_extent(a.w, 3, 16);
  expect_recurrent_rejected<gdn2>(c, a, {"'w'", "[2, 10, 4, 16]", "[2, 10, 4, 8]"});
}

TEST_CASE("validate: residual with the wrong shape") {
  auto c = make_case<delta>();
  auto a = c.args();
  a.residual = with_extent(a.residual, 2, 2);
  expect_recurrent_rejected<delta>(c, a, {"'residual'", "[2, 10, 2, 8]", "[2, 10, 4, 8]"});
}

TEST_CASE("validate: HV not a multiple of H") {
  auto c = make_case<delta>({.B = 2, .T = 10, .H = 2, .HV = 3, .K = 16, .V = 8});
  expect_recurrent_rejected<delta>(c, c.args(), {"'v'", "HV = 3", "H = 2", "[2, 10, 3, 8]", "[2, 10, 2, 16]"});
}

TEST_CASE("validate: a negative extent") {
  auto c = make_case<additive>();
  auto a = c.args();
  a.q = with_extent(a.q, 1, -1);
  expect_recurrent_rejected<additive>(c, a, {"'q'", "[2, -1, 2, 16]"});
}

// ---- gates the rule needs, and only those ------------------------------------------------------------------

TEST_CASE("validate: the scalar gate g missing for gated_delta") {
  auto c = make_case<gated_delta>();
  auto a = c.args();
  a.g = {};
  expect_recurrent_rejected<gated_delta>(c, a, {"'g'", "missing", "gated_delta_rule"});
}

TEST_CASE("validate: the per-key gate gk missing for kda") {
  auto c = make_case<kda>();
  auto a = c.args();
  a.gk = {};
  expect_recurrent_rejected<kda>(c, a, {"'gk'", "missing", "kda"});
}

TEST_CASE("validate: beta missing for delta") {
  auto c = make_case<delta>();
  auto a = c.args();
  a.beta = {};
  expect_recurrent_rejected<delta>(c, a, {"'beta'", "missing", "delta_rule"});
}

TEST_CASE("validate: the erase gate b missing for gdn2") {
  auto c = make_case<gdn2>();
  auto a = c.args();
  a.b = {};
  expect_recurrent_rejected<gdn2>(c, a, {"'b'", "missing", "gdn2"});
}

TEST_CASE("validate: the write gate w missing for gdn2") {
  auto c = make_case<gdn2>();
  auto a = c.args();
  a.w = {};
  expect_recurrent_rejected<gdn2>(c, a, {"'w'", "missing", "gdn2"});
}

TEST_CASE("validate: a scalar gate g given to additive, which takes no gate") {
  auto c = make_case<additive>();
  auto g = make_case<simple_gla>();
  auto a = c.args();
  a.g = g.args().g;
  expect_recurrent_rejected<additive>(c, a, {"'g'", "must not be given", "linear_attn", "[2, 10, 4]"});
}

TEST_CASE("validate: a per-key gate gk given to gated_delta, which takes a scalar gate") {
  auto c = make_case<gated_delta>();
  auto g = make_case<kda>();
  auto a = c.args();
  a.gk = g.args().gk;
  expect_recurrent_rejected<gated_delta>(c, a, {"'gk'", "must not be given", "gated_delta_rule"});
}

TEST_CASE("validate: beta given to gla, which takes none") {
  auto c = make_case<gla>();
  auto d = make_case<delta>();
  auto a = c.args();
  a.beta = d.args().beta;
  expect_recurrent_rejected<gla>(c, a, {"'beta'", "must not be given", "gla"});
}

TEST_CASE("validate: beta given to gdn2, which takes b and w instead") {
  auto c = make_case<gdn2>();
  auto d = make_case<delta>();
  auto a = c.args();
  a.beta = d.args().beta;
  expect_recurrent_rejected<gdn2>(c, a, {"'beta'", "must not be given", "gdn2"});
}

TEST_CASE("validate: GDN-2 gates b and w given to kda") {
  auto c = make_case<kda>();
  auto d = make_case<gdn2>();
  auto a = c.args();
  a.b = d.args().b;
  expect_recurrent_rejected<kda>(c, a, {"'b'", "must not be given", "kda"});
  a.b = {};
  a.w = d.args().w;
  expect_recurrent_rejected<kda>(c, a, {"'w'", "must not be given", "kda"});
}

TEST_CASE("validate: beta_act set for a rule without beta") {
  auto c = make_case<simple_gla>();
  auto a = c.args();
  a.beta_act = beta_activation::sigmoid;
  expect_recurrent_rejected<simple_gla>(c, a, {"'beta_act'", "simple_gla"});
}

TEST_CASE("validate: normalize set for a rule other than additive") {
  auto c = make_case<simple_gla>();
  auto a = c.args();
  a.normalize = true;
  expect_recurrent_rejected<simple_gla>(c, a, {"'normalize'", "simple_gla"});
}

// ---- in-kernel gate arguments ------------------------------------------------------------------------------

TEST_CASE("validate: gate.A_log given to a rule without decay") {
  auto c = make_case<delta>();
  const std::vector<float> A(4, 0.f);
  auto a = c.args();
  a.gate.A_log = contiguous<1>(A.data(), {4});
  expect_recurrent_rejected<delta>(c, a, {"'gate.A_log'", "delta_rule"});
}

TEST_CASE("validate: gate.A_log with the wrong length") {
  auto c = make_case<gated_delta>();
  const std::vector<float> A(2, 0.f);
  auto a = c.args();
  a.gate.A_log = contiguous<1>(A.data(), {2});
  expect_recurrent_rejected<gated_delta>(c, a, {"'gate.A_log'", "[2]", "[4]"});
}

TEST_CASE("validate: gate.dt_bias [HV] given for a per-key gate, which needs [HV*K]") {
  auto c = make_case<kda>();
  const std::vector<float> A(4, 0.f), dt(4, 0.f);
  auto a = c.args();
  a.gate.A_log = contiguous<1>(A.data(), {4});
  a.gate.dt_bias = contiguous<1>(dt.data(), {4});
  expect_recurrent_rejected<kda>(c, a, {"'gate.dt_bias'", "[4]", "[64]"});
}

TEST_CASE("validate: gate.dt_bias or gate.lower_bound without gate.A_log") {
  auto c = make_case<kda>();
  const std::vector<float> dt(64, 0.f);
  auto a = c.args();
  a.gate.dt_bias = contiguous<1>(dt.data(), {64});
  expect_recurrent_rejected<kda>(c, a, {"'gate.dt_bias'", "A_log"});
  a.gate.dt_bias = {};
  a.gate.lower_bound = -5.f;
  expect_recurrent_rejected<kda>(c, a, {"'gate.lower_bound'", "A_log"});
}

// ---- states ------------------------------------------------------------------------------------------------

TEST_CASE("validate: initial_state with the wrong shape") {
  auto c = make_case<kda>();
  auto a = c.args();
  a.initial_state = with_extent(a.initial_state, 3, 7);
  expect_recurrent_rejected<kda>(c, a, {"'initial_state'", "[2, 4, 16, 7]", "[2, 4, 16, 8]"});
}

TEST_CASE("validate: initial_state with the wrong number of sequences") {
  auto c = make_case<kda>();
  auto a = c.args();
  a.initial_state = with_extent(a.initial_state, 0, 1);
  expect_recurrent_rejected<kda>(c, a, {"'initial_state'", "[1, 4, 16, 8]", "[2, 4, 16, 8]"});
}

TEST_CASE("validate: final_state with the wrong shape") {
  auto c = make_case<kda>();
  tensor<float, 4> wrong({2, 4, 8, 16}, float(sentinel));
  auto a = c.args();
  a.final_state = wrong;
  expect_recurrent_rejected<kda>(c, a, {"'final_state'", "[2, 4, 8, 16]", "[2, 4, 16, 8]"});
  CHECK(untouched(wrong));
}

// ---- cu_seqlens --------------------------------------------------------------------------------------------

TEST_CASE("validate: cu_seqlens not starting at 0") {
  auto c = make_case<gated_delta>({.B = 1, .T = 10, .H = 2, .HV = 4, .K = 16, .V = 8});
  const std::vector<std::int64_t> cu = {1, 4, 10};
  auto a = c.args();
  a.cu_seqlens = cu;
  expect_recurrent_rejected<gated_delta>(c, a, {"'cu_seqlens'", "start at 0", "cu_seqlens[0] = 1"});
}

TEST_CASE("validate: cu_seqlens decreasing") {
  auto c = make_case<gated_delta>({.B = 1, .T = 10, .H = 2, .HV = 4, .K = 16, .V = 8});
  const std::vector<std::int64_t> cu = {0, 6, 4, 10};
  auto a = c.args();
  a.cu_seqlens = cu;
  expect_recurrent_rejected<gated_delta>(c, a, {"'cu_seqlens'", "decrease", "cu_seqlens[2] = 4"});
}

TEST_CASE("validate: cu_seqlens not ending at T") {
  auto c = make_case<gated_delta>({.B = 1, .T = 10, .H = 2, .HV = 4, .K = 16, .V = 8});
  const std::vector<std::int64_t> cu = {0, 4, 9};
  auto a = c.args();
  a.cu_seqlens = cu;
  expect_recurrent_rejected<gated_delta>(c, a, {"'cu_seqlens'", "T = 10", "9"});
}

TEST_CASE("validate: cu_seqlens with B != 1") {
  auto c = make_case<gated_delta>({.B = 2, .T = 10, .H = 2, .HV = 4, .K = 16, .V = 8});
  const std::vector<std::int64_t> cu = {0, 4, 10};
  auto a = c.args();
  a.cu_seqlens = cu;
  expect_recurrent_rejected<gated_delta>(c, a, {"'cu_seqlens'", "B = 1", "[2, 10, 2, 16]"});
}

TEST_CASE("validate: cu_seqlens with a single entry") {
  auto c = make_case<gated_delta>({.B = 1, .T = 0, .H = 2, .HV = 4, .K = 16, .V = 8});
  const std::vector<std::int64_t> cu = {0};
  auto a = c.args();
  a.cu_seqlens = cu;
  expect_recurrent_rejected<gated_delta>(c, a, {"'cu_seqlens'", "1 entries"});
}

TEST_CASE("validate: initial_state with B rows instead of one per packed sequence") {
  auto c = make_case<delta>({.B = 1, .T = 10, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true});
  const std::vector<std::int64_t> cu = {0, 3, 7, 10};
  auto a = c.args();
  a.cu_seqlens = cu;
  expect_recurrent_rejected<delta>(c, a, {"'initial_state'", "[1, 4, 16, 8]", "[3, 4, 16, 8]"});
}

// ---- null pointers -----------------------------------------------------------------------------------------

TEST_CASE("validate: q not given") {
  auto c = make_case<additive>();
  auto a = c.args();
  a.q = {};
  expect_recurrent_rejected<additive>(c, a, {"'q'", "missing"});
}

TEST_CASE("validate: k not given") {
  auto c = make_case<additive>();
  auto a = c.args();
  a.k = {};
  expect_recurrent_rejected<additive>(c, a, {"'k'", "missing"});
}

TEST_CASE("validate: v not given") {
  auto c = make_case<additive>();
  auto a = c.args();
  a.v = {};
  expect_recurrent_rejected<additive>(c, a, {"'v'", "missing"});
}

TEST_CASE("validate: o not given") {
  auto c = make_case<additive>();
  auto a = c.args();
  a.o = {};
  expect_recurrent_rejected<additive>(c, a, {"'o'", "missing"});
}

TEST_CASE("validate: q with a shape but a null data pointer") {
  auto c = make_case<additive>();
  auto a = c.args();
  a.q.ptr = nullptr;
  expect_recurrent_rejected<additive>(c, a, {"'q'", "null", "[2, 10, 2, 16]"});
}

TEST_CASE("validate: k with a shape but a null data pointer") {
  auto c = make_case<additive>();
  auto a = c.args();
  a.k.ptr = nullptr;
  expect_recurrent_rejected<additive>(c, a, {"'k'", "null", "[2, 10, 2, 16]"});
}

TEST_CASE("validate: v with a shape but a null data pointer") {
  auto c = make_case<additive>();
  auto a = c.args();
  a.v.ptr = nullptr;
  expect_recurrent_rejected<additive>(c, a, {"'v'", "null", "[2, 10, 4, 8]"});
}

TEST_CASE("validate: o with a shape but a null data pointer") {
  auto c = make_case<additive>();
  auto a = c.args();
  a.o.ptr = nullptr;
  expect_recurrent_rejected<additive>(c, a, {"'o'", "null", "[2, 10, 4, 8]"});
}

TEST_CASE("validate: an optional input (initial_state) with a shape but a null data pointer") {
  auto c = make_case<kda>();
  auto a = c.args();
  a.initial_state.ptr = nullptr;
  expect_recurrent_rejected<kda>(c, a, {"'initial_state'", "null", "[2, 4, 16, 8]"});
}

TEST_CASE("T = 0 with null data pointers (as torch's empty tensors) is a valid no-op") {
  auto c = make_case<kda>();
  auto a = c.args();
  // Views with shapes [2, 0, ...] and no data at all.
  for (auto* x : {&a.q, &a.k, &a.v, &a.gk}) *x = with_extent(*x, 1, 0), x->ptr = nullptr;
  a.beta = with_extent(a.beta, 1, 0), a.beta.ptr = nullptr;
  a.o = with_extent(a.o, 1, 0), a.o.ptr = nullptr;
  a.residual = with_extent(a.residual, 1, 0), a.residual.ptr = nullptr;
  recurrent<kda>(a);
  CHECK(std::equal(c.ht.values().begin(), c.ht.values().end(), c.h0.values().begin()));
}

// ---- options and forms -------------------------------------------------------------------------------------

TEST_CASE("validate: chunk_size zero") {
  auto c = make_case<delta>();
  auto a = c.args();
  a.chunk_size = 0;
  expect_recurrent_rejected<delta>(c, a, {"'chunk_size'", "0"});
}

TEST_CASE("validate: chunk_size negative") {
  auto c = make_case<delta>();
  auto a = c.args();
  a.chunk_size = -64;
  expect_recurrent_rejected<delta>(c, a, {"'chunk_size'", "-64"});
}

TEST_CASE("validate: scale not finite") {
  auto c = make_case<delta>();
  auto a = c.args();
  a.scale = std::numeric_limits<double>::quiet_NaN();
  expect_recurrent_rejected<delta>(c, a, {"'scale'"});
}

TEST_CASE("validate: CCQ lambda given to the identity read") {
  auto c = make_case<delta>();
  tensor<float, 3> lambda({2, 10, 4}, 0.5f);
  auto a = c.args();
  a.ccq.lambda = lambda;
  expect_recurrent_rejected<delta>(c, a, {"'ccq.lambda'", "identity read"});
}

TEST_CASE("validate: CCQ statistics given to the identity read") {
  auto c = make_case<delta>();
  tensor<float, 4> C({2, 4, 16, 16});
  auto a = c.args();
  a.ccq.C = C;
  expect_recurrent_rejected<delta>(c, a, {"'ccq.C'", "identity read"});
}

TEST_CASE("validate: checkpoints given to the recurrent form") {
  auto c = make_case<delta>();
  tensor<float, 5> ck({2, 1, 4, 16, 8});
  auto a = c.args();
  a.checkpoints = ck;
  expect_recurrent_rejected<delta>(c, a, {"'checkpoints'"});
}

TEST_CASE("validate: state_indices given to the recurrent form") {
  auto c = make_case<delta>();
  const std::vector<std::int32_t> idx = {0, 1};
  auto a = c.args();
  a.state_indices = idx;
  expect_recurrent_rejected<delta>(c, a, {"'state_indices'"});
}

// ---- the decode step ---------------------------------------------------------------------------------------

TEST_CASE("validate step: T != 1") {
  auto c = make_case<gated_delta>({.B = 2, .T = 2, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true});
  expect_step_rejected<gated_delta>(c, c.args(), {"'q'", "[2, 2, 2, 16]", "T = 1"});
}

TEST_CASE("validate step: a state index out of range") {
  auto c = make_case<gated_delta>({.B = 2, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true});
  const std::vector<std::int32_t> idx = {0, 2};  // the pool has N = 2 rows
  auto a = c.args();
  a.state_indices = idx;
  expect_step_rejected<gated_delta>(c, a, {"'state_indices[1]'", "= 2", "N = 2"});
}

TEST_CASE("validate step: a state index below -1") {
  auto c = make_case<gated_delta>({.B = 2, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true});
  const std::vector<std::int32_t> idx = {-2, 0};
  auto a = c.args();
  a.state_indices = idx;
  expect_step_rejected<gated_delta>(c, a, {"'state_indices[0]'", "-2"});
}

TEST_CASE("validate step: state_indices with the wrong count") {
  auto c = make_case<gated_delta>({.B = 2, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true});
  const std::vector<std::int32_t> idx = {0, 1, 1};
  auto a = c.args();
  a.state_indices = idx;
  expect_step_rejected<gated_delta>(c, a, {"'state_indices'", "3 entries", "B = 2"});
}

TEST_CASE("validate step: state_indices without a state pool") {
  auto c = make_case<gated_delta>({.B = 2, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8});
  const std::vector<std::int32_t> idx = {0, 1};
  auto a = c.args();
  a.final_state = {};
  a.state_indices = idx;
  expect_step_rejected<gated_delta>(c, a, {"'state_indices'", "pool"});
}

TEST_CASE("validate step: initial and final pools of different sizes") {
  auto c = make_case<gated_delta>({.B = 2, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true});
  tensor<float, 4> big({3, 4, 16, 8}, float(sentinel));
  const std::vector<std::int32_t> idx = {0, 1};
  auto a = c.args();
  a.final_state = big;
  a.state_indices = idx;
  expect_step_rejected<gated_delta>(c, a, {"'final_state'", "[3, 4, 16, 8]", "[2, 4, 16, 8]"});
  CHECK(untouched(big));
}

TEST_CASE("validate step: cu_seqlens given") {
  auto c = make_case<gated_delta>({.B = 1, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true});
  const std::vector<std::int64_t> cu = {0, 1};
  auto a = c.args();
  a.cu_seqlens = cu;
  expect_step_rejected<gated_delta>(c, a, {"'cu_seqlens'"});
}

TEST_CASE("validate step: normalize given") {
  auto c = make_case<additive>({.B = 2, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true});
  auto a = c.args();
  a.normalize = true;
  expect_step_rejected<additive>(c, a, {"'normalize'"});
}

TEST_CASE("validate step: two rows naming the same state") {
  auto c = make_case<gated_delta>({.B = 3, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8});
  tensor<float, 4> pool({4, 4, 16, 8}, float(sentinel));
  const std::vector<std::int32_t> idx = {2, -1, 2};
  auto a = c.args();
  a.initial_state = pool;
  a.final_state = pool;
  a.state_indices = idx;
  expect_step_rejected<gated_delta>(c, a, {"'state_indices'", "state 2", "more than one"});
  CHECK(untouched(pool));
}

TEST_CASE("step: several -1 rows are allowed") {
  auto c = make_case<gated_delta>({.B = 3, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8});
  tensor<float, 4> pool({2, 4, 16, 8}, 0.f);
  const std::vector<std::int32_t> idx = {-1, 1, -1};
  auto a = c.args();
  a.initial_state = pool;
  a.final_state = pool;
  a.state_indices = idx;
  CHECK_NOTHROW(step<gated_delta>(a));
}

TEST_CASE("step: rows may share a state they only read (no final_state)") {
  auto c = make_case<gated_delta>({.B = 3, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8});
  auto pool = random_case<gated_delta, float>::make({.B = 2, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8,
                                                     .initial_state = true});
  const std::vector<std::int32_t> idx = {1, 1, 0};
  auto a = c.args();
  a.initial_state = pool.h0;
  a.final_state = {};
  a.state_indices = idx;
  step<gated_delta>(a);
  // Rows 0 and 1 read state 1: the same state, different tokens, so both are computed from the same S_0.
  auto ref = c.cast<double>();
  tensor<double, 4> gathered({3, 4, 16, 8});
  for (index_t b = 0; b < 3; ++b)
    for (std::size_t e = 0; e < 4 * 16 * 8; ++e)
      gathered.data()[b * 4 * 16 * 8 + e] = pool.h0.data()[idx[b] * 4 * 16 * 8 + e];
  auto ra = ref.args();
  ra.initial_state = gathered;
  reference::recurrent<gated_delta>(ra);
  CHECK(relative_error(c.o, ref.o) <= tolerance_for<float>());
}
