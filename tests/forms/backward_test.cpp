// linea::backward on the cpu and generic backends against the float64 reference backward (SPEC §6): every rule ×
// read, float64 / float32 / bf16 / fp16 inputs, chunk sizes that do and do not divide T, packed sequences with an
// empty one, grouped value heads (G = 2), every forward option; bad arguments rejected before anything is
// written; no NaN from the §5 input ranges (log decays down to −20, β up to 2).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "forms/backward_case.hpp"
#include "reference/finite_differences.hpp"
#include "support/rejection.hpp"
#include "support/rules.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

template <class Read>
std::string read_name() {
  if constexpr (Read::is_identity) return "identity";
  else return std::string("ccq<") + Read::weighting::name + ">";
}

template <class Rule, class Read, class Backend, class T>
void check(const case_shape& shape, const backward_options& opt) {
  const std::string what = std::string(rule_name<Rule>::value) + " " + read_name<Read>() + " " + storage_name<T>::value +
                           " " + describe_shape(shape);
  INFO(what);
  backward_case<Rule, Read, T> c(shape, opt);
  linea::backward<Rule, Read, Backend>(c.args(), c.grads());
  c.check_against_reference();
  CHECK(c.compared >= 4);
}

template <class Backend>
struct backend_name;
template <>
struct backend_name<backend::cpu> {
  static constexpr const char* value = "cpu";
};
template <>
struct backend_name<backend::generic> {
  static constexpr const char* value = "generic";
};

// B = 2 with S_0 (and CCQ initial statistics, explicit c_t for the decayed weighting), T = 37 over chunks of 16
// and 5; then packed sequences {13, 0, 20} with HV = 2·H, chunk 8.
template <class Rule, class Read, class Backend, class T>
void rule_and_read() {
  constexpr bool decayed = !Read::is_identity && requires { requires Read::weighting::decays; };
  INFO(backend_name<Backend>::value);
  for (index_t C : {16, 5}) {
    case_shape shape{.B = 2, .T = 37, .H = 2, .HV = 2, .K = 16, .V = 12, .initial_state = true, .seed = 11};
    INFO("batch, initial state, chunk ", C);
    check<Rule, Read, Backend, T>(shape, {.chunk_size = C, .ccq = {.initial_stats = true, .explicit_log_decay = decayed}});
  }
  {
    case_shape shape{.H = 2, .HV = 4, .K = 8, .V = 20, .seqlens = {13, 0, 20}, .seed = 12};
    INFO("packed sequences, GVA G = 2");
    check<Rule, Read, Backend, T>(shape, {.chunk_size = 8, .threads = 2});
  }
}

template <class Rule, class T>
void every_read_and_backend() {
  SUBCASE("identity, cpu") { rule_and_read<Rule, read::identity, backend::cpu, T>(); }
  SUBCASE("identity, generic") { rule_and_read<Rule, read::identity, backend::generic, T>(); }
  SUBCASE("ccq<uniform>, cpu") { rule_and_read<Rule, read::ccq<read::uniform>, backend::cpu, T>(); }
  SUBCASE("ccq<decayed>, cpu") { rule_and_read<Rule, read::ccq<read::decayed>, backend::cpu, T>(); }
}

// A rejected call: a linea::error naming `words`, and no gradient buffer written (they stay NaN).
template <class Rule, class Backend, class C>
void expect_rejected(C& c, const arguments<float>& a, const gradients<float>& g, std::initializer_list<std::string> words) {
  const std::string message = message_of([&] { linea::backward<Rule, read::identity, Backend>(a, g); });
  INFO("message: ", message);
  REQUIRE_MESSAGE(!message.empty(), "no linea::error was thrown");
  for (const auto& w : words) CHECK_MESSAGE(message.find(w) != std::string::npos, "missing word: ", w);
  const auto untouched = [](const auto& t) {
    return std::all_of(t.values().begin(), t.values().end(), [](auto e) { return std::isnan(double(e)); });
  };
  CHECK(untouched(c.out().dq));
  CHECK(untouched(c.out().dv));
  CHECK(untouched(c.out().dh0));
}

template <class Backend>
void rejects_bad_arguments() {
  const case_shape shape{.B = 2, .T = 6, .H = 2, .HV = 4, .K = 8, .V = 4, .initial_state = true};
  backward_case<kda, read::identity, float> c(shape, {});
  {
    auto g = c.grads();
    g.d_o = {};
    expect_rejected<kda, Backend>(c, c.args(), g, {"'d_o'", "missing"});
  }
  {
    auto g = c.grads();
    g.dq.ext[3] = 5;
    expect_rejected<kda, Backend>(c, c.args(), g, {"'dq'", "[2, 6, 2, 5]", "[2, 6, 2, 8]"});
  }
  {
    auto g = c.grads();
    tensor<float, 3> dg({2, 6, 4});
    g.dg = dg;
    expect_rejected<kda, Backend>(c, c.args(), g, {"'dg'", "no scalar gate"});
  }
  // Aliasing (docs/usage.md): a gradient may overwrite only its own input, exactly. These overlaps gave wrong
  // gradients on the CPU before they were refused (dv over v one token on: 0.96 relative error; dq over k with
  // qk_l2norm: 6.5).
  {
    auto g = c.grads();
    g.dq = strided<4>(const_cast<float*>(c.args().k.ptr), {2, 6, 2, 8}, {96, 16, 8, 1});
    expect_rejected<kda, Backend>(c, c.args(), g, {"'dq'", "'k'", "overlaps"});
  }
  {
    tensor<float, 4> both({2, 7, 2, 8});  // q over tokens 0..5, dq over tokens 1..6 of one buffer
    auto a = c.args();
    a.q = strided<4>(static_cast<const float*>(both.data()), {2, 6, 2, 8}, {112, 16, 8, 1});
    auto g = c.grads();
    g.dq = strided<4>(both.data() + 16, {2, 6, 2, 8}, {112, 16, 8, 1});
    expect_rejected<kda, Backend>(c, a, g, {"'dq'", "'q'", "overlaps"});
  }
  {
    auto g = c.grads();
    g.dv = strided<4>(const_cast<float*>(g.d_o.ptr), {2, 6, 4, 4}, {96, 16, 4, 1});
    expect_rejected<kda, Backend>(c, c.args(), g, {"'dv'", "'d_o'"});
  }
  {
    auto g = c.grads();
    g.d_initial_state = strided<4>(const_cast<float*>(g.d_final_state.ptr), {2, 4, 8, 4}, {128, 32, 4, 1});
    expect_rejected<kda, Backend>(c, c.args(), g, {"'d_initial_state'", "'d_final_state'"});
  }
  {
    auto g = c.grads();
    g.dq.str[1] = 0;  // written token by token: the sum over T would be lost (only dg, dbeta, ... may broadcast)
    expect_rejected<kda, Backend>(c, c.args(), g, {"'dq'", "stride 0"});
  }
  {
    auto g = c.grads();  // strides not 0 that still share elements: token t + 1 is token t's next key head
    g.dq.str[1] = 8;
    expect_rejected<kda, Backend>(c, c.args(), g, {"'dq'", "strides [96, 8, 8, 1]", "one element"});
  }
  {
    auto a = c.args();  // without o, a d_o of the wrong shape is named as d_o (it was reported as 'o')
    a.o = {};
    auto g = c.grads();
    g.d_o.ext[3] = 5;
    expect_rejected<kda, Backend>(c, a, g, {"'d_o'", "[2, 6, 4, 5]", "[2, 6, 4, 4]"});
  }
  {
    auto a = c.args();
    a.chunk_size = 0;
    expect_rejected<kda, Backend>(c, a, c.grads(), {"'chunk_size'"});
  }
  {
    auto a = c.args();
    tensor<float, 5> ckpt({2, 1, 4, 8, 4});
    a.checkpoints = ckpt;
    expect_rejected<kda, Backend>(c, a, c.grads(), {"'checkpoints'"});
  }
}

const case_shape small{.B = 2, .T = 21, .H = 1, .HV = 2, .K = 8, .V = 6, .initial_state = true, .seed = 21};

}  // namespace

TEST_CASE_TEMPLATE("backward = reference backward, float32, every rule and read", Rule, LINEA_ALL_RULES) {
  every_read_and_backend<Rule, float>();
}

TEST_CASE_TEMPLATE("backward = reference backward, float64, every rule", Rule, LINEA_ALL_RULES) {
  SUBCASE("identity, cpu") { rule_and_read<Rule, read::identity, backend::cpu, double>(); }
  SUBCASE("ccq<decayed>, cpu") { rule_and_read<Rule, read::ccq<read::decayed>, backend::cpu, double>(); }
}

TEST_CASE_TEMPLATE("backward = reference backward, bf16 and fp16 inputs", Rule, LINEA_ALL_RULES) {
  SUBCASE("bf16") { rule_and_read<Rule, read::identity, backend::cpu, bf16>(); }
  SUBCASE("fp16") { rule_and_read<Rule, read::ccq<read::decayed>, backend::cpu, fp16>(); }
}

TEST_CASE("backward rejects bad arguments before writing anything") {
  SUBCASE("cpu") {
    rejects_bad_arguments<backend::cpu>();
    backward_case<kda, read::identity, float> c({.B = 1, .T = 4, .H = 1, .HV = 1, .K = 4, .V = 4}, {.threads = -1});
    expect_rejected<kda, backend::cpu>(c, c.args(), c.grads(), {"'threads'", "-1"});
  }
  SUBCASE("generic") { rejects_bad_arguments<backend::generic>(); }
}

// The reference backend stores 16-bit gradients too (it added into them in the 16-bit type, which did not compile).
TEST_CASE("backward: the reference backend with bf16 arguments") {
  check<gated_delta, read::identity, backend::reference, bf16>(small, {.g_gamma = true});
}

TEST_CASE("backward: in-kernel L2 norm of q and k") {
  check<gated_delta, read::identity, backend::cpu, float>(small, {.qk_l2norm = true});
  check<kda, read::ccq<read::decayed>, backend::cpu, float>(small, {.qk_l2norm = true});
  check<gdn2, read::ccq<read::uniform>, backend::generic, double>(small, {.qk_l2norm = true});
  check<additive, read::identity, backend::cpu, double>(small, {.qk_l2norm = true});
}

TEST_CASE("backward: in-kernel gates (A_log, dt_bias, lower bound)") {
  check<gated_delta, read::identity, backend::cpu, float>(small, {.gate = true});
  check<simple_gla, read::ccq<read::decayed>, backend::cpu, float>(small, {.gate = true});
  check<gated_delta, read::identity, backend::cpu, double>(small, {.gate = true, .lower_bound = true});
  check<kda, read::identity, backend::cpu, float>(small, {.gate = true});
  check<kda, read::identity, backend::generic, double>(small, {.gate = true, .lower_bound = true});
  check<gla, read::ccq<read::decayed>, backend::cpu, float>(small, {.gate = true, .lower_bound = true});
  check<gdn2, read::identity, backend::cpu, bf16>(small, {.gate = true});
}

TEST_CASE("backward: beta activation") {
  check<delta, read::identity, backend::cpu, float>(small, {.beta_act = beta_activation::sigmoid});
  check<gated_delta, read::ccq<read::uniform>, backend::cpu, double>(small, {.beta_act = beta_activation::two_sigmoid});
  check<kda, read::identity, backend::generic, float>(small, {.beta_act = beta_activation::two_sigmoid});
}

TEST_CASE("backward: normalize (additive)") {
  check<additive, read::identity, backend::cpu, float>(small, {.normalize = true});
  check<additive, read::ccq<read::uniform>, backend::cpu, double>(small, {.normalize = true});
  case_shape packed{.H = 1, .HV = 2, .K = 8, .V = 6, .seqlens = {9, 14}, .seed = 5};
  check<additive, read::identity, backend::generic, float>(packed, {.normalize = true, .chunk_size = 4});
  // the CPU backward over packed sequences (z restarts per sequence), GVA, the L2 norm (raw vs normalised q, k)
  check<additive, read::identity, backend::cpu, float>(packed, {.qk_l2norm = true, .normalize = true});
}

TEST_CASE("backward: g_gamma (a stride-0 gate and its stride-0 gradient)") {
  check<simple_gla, read::identity, backend::cpu, float>(small, {.g_gamma = true});
  check<gated_delta, read::ccq<read::decayed>, backend::cpu, double>(small, {.g_gamma = true, .threads = 2});
}

// A summed gradient whose strides are not 0 but still put several positions on one element (dg [2, 21, 2] with
// strides [1, 2, 1]: (b = 1, hv = 0) and (b = 0, hv = 1) share) receives their sum, like g_gamma's; it kept one
// position's value before.
TEST_CASE("backward: a summed gradient over an overlapping layout receives the sum of what it covers") {
  backward_case<simple_gla, read::identity, float> c(small, {.chunk_size = 8});
  auto g = c.grads();
  std::vector<float> dg(43, NAN);
  g.dg = strided<3>(dg.data(), {2, 21, 2}, {1, 2, 1});
  linea::backward<simple_gla>(c.args(), g);
  auto& ref = c.reference_out();
  std::vector<double> want(43, 0.0);
  for (index_t b = 0; b < 2; ++b)
    for (index_t t = 0; t < 21; ++t)
      for (index_t hv = 0; hv < 2; ++hv) want[b + 2 * t + hv] += ref.dg(b, t, hv);
  CHECK(relative_error(dg.data(), want.data(), dg.size()) <= gradient_tolerance_for<float>());
}

// Shapes at the edges: T = 0 (with the CCQ read: every gradient of the initial state and statistics), T = 1, odd
// K (63, 129) and V ≠ K, K = V = 256, V = 256 with K = 3, packed sequences of lengths 0 and 1, 60 short sequences.
TEST_CASE("backward: edge shapes") {
  const ccq_options stats{.initial_stats = true, .explicit_log_decay = true};
  using decayed = read::ccq<read::decayed>;
  check<kda, decayed, backend::cpu, float>({.B = 2, .T = 0, .H = 1, .HV = 2, .K = 8, .V = 4, .initial_state = true},
                                           {.ccq = stats});
  check<gated_delta, decayed, backend::cpu, double>({.B = 1, .T = 1, .H = 1, .HV = 1, .K = 8, .V = 4, .initial_state = true},
                                                    {.ccq = stats});
  check<gdn2, decayed, backend::cpu, float>({.B = 1, .T = 40, .H = 1, .HV = 2, .K = 63, .V = 17, .initial_state = true},
                                            {.chunk_size = 16, .ccq = stats});
  check<kda, read::identity, backend::cpu, float>({.B = 1, .T = 20, .H = 1, .HV = 1, .K = 129, .V = 5}, {.chunk_size = 7});
  check<gated_delta, read::identity, backend::cpu, float>(
      {.B = 1, .T = 9, .H = 1, .HV = 1, .K = 256, .V = 256, .initial_state = true}, {.chunk_size = 4});
  check<gla, read::identity, backend::cpu, float>({.B = 1, .T = 9, .H = 1, .HV = 1, .K = 3, .V = 256, .initial_state = true},
                                                  {.chunk_size = 4});
  check<kda, decayed, backend::cpu, float>({.H = 1, .HV = 2, .K = 8, .V = 4, .seqlens = {0, 1, 0, 5, 1, 0}, .initial_state = true},
                                           {.chunk_size = 2, .threads = 2, .ccq = stats});
  // A non-symmetric C0 (initial statistics plus an antisymmetric part, read as the row product C q): the CPU CCQ
  // tape's transposed products (Cᵀdy, dCᵀk) are the only place where C ≠ Cᵀ shows.
  check<gated_delta, read::ccq<read::uniform>, backend::cpu, double>(
      {.B = 1, .T = 40, .H = 1, .HV = 2, .K = 12, .V = 5, .initial_state = true},
      {.chunk_size = 16, .ccq = {.initial_stats = true, .skewed_C0 = true}});
  check<kda, decayed, backend::cpu, float>({.B = 2, .T = 23, .H = 1, .HV = 1, .K = 20, .V = 6, .initial_state = true},
                                           {.chunk_size = 8, .ccq = {.initial_stats = true, .explicit_log_decay = true,
                                                                     .skewed_C0 = true}});
  {  // B = 0: no sequences, nothing to compute (no item to share out among threads)
    backward_case<kda, decayed, float> none({.B = 0, .T = 5, .H = 1, .HV = 2, .K = 8, .V = 4, .initial_state = true},
                                            {.threads = 0, .ccq = stats});
    CHECK_NOTHROW((linea::backward<kda, decayed>(none.args(), none.grads())));
    CHECK_NOTHROW((linea::backward<kda, decayed, backend::generic>(none.args(), none.grads())));
  }
  std::vector<std::int64_t> lengths;
  for (int i = 0; i < 60; ++i) lengths.push_back((i * 7) % 5);
  check<gated_delta, read::identity, backend::cpu, float>(
      {.H = 1, .HV = 2, .K = 4, .V = 3, .seqlens = lengths, .initial_state = true}, {.chunk_size = 3, .threads = 0});
}

TEST_CASE("backward: scale, head-first strides, beta up to 2, many threads") {
  case_shape hf{.B = 2, .T = 30, .H = 2, .HV = 4, .K = 6, .V = 10, .initial_state = true, .head_first = true,
                .beta_max = 2, .seed = 8};
  check<gated_delta, read::identity, backend::cpu, float>(hf, {.scale = 0.3, .threads = 3});
  check<gdn2, read::ccq<read::decayed>, backend::cpu, double>(hf, {.scale = 0.7, .threads = 0});
}

TEST_CASE("backward: the result does not depend on the thread count or the chunk size beyond rounding") {
  case_shape shape{.B = 3, .T = 50, .H = 2, .HV = 4, .K = 16, .V = 16, .initial_state = true, .seed = 4};
  backward_options opt{.gate = true, .chunk_size = 16, .threads = 1};
  backward_case<kda, read::identity, float> one(shape, opt);
  linea::backward<kda>(one.args(), one.grads());
  opt.threads = 4;
  backward_case<kda, read::identity, float> four(shape, opt);
  linea::backward<kda>(four.args(), four.grads());
  CHECK(relative_error(one.out().dq, four.out().dq) == 0.0);  // same items, same order within each item
  CHECK(relative_error(one.out().dA_log, four.out().dA_log) == 0.0);
}

TEST_CASE("backward: no NaN or Inf from the SPEC §5 ranges (log decays in [−20, 0], β up to 2), long chunks") {
  case_shape extreme{.B = 1, .T = 300, .H = 2, .HV = 2, .K = 32, .V = 32, .initial_state = true,
                     .gates = gate_range::extreme, .beta_max = 2, .seed = 9};
  check<gated_delta, read::identity, backend::cpu, float>(extreme, {.chunk_size = 64});
  check<kda, read::ccq<read::decayed>, backend::cpu, float>(extreme, {.chunk_size = 128});
  check<gdn2, read::identity, backend::cpu, bf16>(extreme, {.chunk_size = 64});
  check<gla, read::identity, backend::cpu, float>(extreme, {.chunk_size = 32});
}

// CCQ's normaliser z at zero. z_0 = 0 given with C0 = m0 = 0 (a fresh sequence's statistics passed explicitly, as a
// state pool holds them): every gradient, dz0 included, is that of a smooth function there. z_t = 0 inside the
// sequence (a caller's z0 = −1 or −2 under the uniform weighting cancels the count at token 1 or 2): the read takes
// Σ_t = 0 (read/ccq_statistics.hpp) and the backward the adjoint of that constant — token t's read adds nothing to
// dC, dm, dz (the `z != 0` branches of reference/read_adjoint.hpp and backend/cpu/ccq_tape.hpp). Each: the float64
// reference against central differences (every input; z0 too where the forward is smooth in it — not beside
// z_t = 0, where C_t / z_t → ∞), then the CPU backward in float64 and float32 against the reference (SPEC §6) and
// finite. Chunk size 2 puts z_2 = 0 on a checkpoint boundary.
TEST_CASE("backward: CCQ with a zero normaliser (z_0 = 0 given, z_t = 0 inside the sequence)") {
  const case_shape tiny{.B = 2, .T = 7, .H = 1, .HV = 2, .K = 4, .V = 3, .initial_state = true, .seed = 31};
  const case_shape shape{.B = 2, .T = 37, .H = 2, .HV = 2, .K = 16, .V = 12, .initial_state = true, .seed = 31};
  using uniform = read::ccq<read::uniform>;
  using decayed = read::ccq<read::decayed>;
  SUBCASE("z_0 = 0: the statistics of no key, given") {
    const ccq_options none{.initial_stats = true, .empty_initial_stats = true};
    const ccq_options none_c{.initial_stats = true, .explicit_log_decay = true, .empty_initial_stats = true};
    CHECK(fd_case<gated_delta, decayed>(tiny, {.ccq = none_c}).check() == 11);  // q k v g β S0 λ c C0 m0 z0
    CHECK(fd_case<kda, uniform>(tiny, {.ccq = none}).check() == 10);            // q k v gk β S0 λ C0 m0 z0
    for (index_t C : {16, 2}) {
      CAPTURE(C);
      check<gated_delta, decayed, backend::cpu, double>(shape, {.chunk_size = C, .ccq = none_c});
      check<gated_delta, decayed, backend::cpu, float>(shape, {.chunk_size = C, .ccq = none_c});
      check<kda, uniform, backend::cpu, double>(shape, {.chunk_size = C, .ccq = none});
      check<kda, uniform, backend::cpu, float>(shape, {.chunk_size = C, .ccq = none});
    }
  }
  SUBCASE("z_t = 0 inside the sequence") {
    for (double z0 : {-1.0, -2.0}) {
      CAPTURE(z0);
      const ccq_options cancel{.initial_stats = true, .z0 = z0};
      CHECK(fd_case<gated_delta, uniform>(tiny, {.ccq = cancel, .fd_z0 = false}).check() == 9);  // all but z0
      CHECK(fd_case<kda, uniform>(tiny, {.ccq = cancel, .fd_z0 = false}).check() == 9);
      for (index_t C : {16, 2}) {
        CAPTURE(C);
        check<gated_delta, uniform, backend::cpu, double>(shape, {.chunk_size = C, .ccq = cancel});
        check<gated_delta, uniform, backend::cpu, float>(shape, {.chunk_size = C, .ccq = cancel});
        check<kda, uniform, backend::cpu, double>(shape, {.chunk_size = C, .ccq = cancel});
        check<kda, uniform, backend::cpu, float>(shape, {.chunk_size = C, .ccq = cancel});
      }
    }
  }
}

// Every gradient view over its own input (same pointer, extents, strides): the result equals separate buffers'.
template <class Rule, class Read, class Backend>
void in_place_equals_separate(const backward_options& opt) {
  const case_shape shape{.B = 2, .T = 20, .H = 1, .HV = 2, .K = 8, .V = 6, .initial_state = true, .seed = 31};
  backward_case<Rule, Read, float> apart(shape, opt), over(shape, opt);
  linea::backward<Rule, Read, Backend>(apart.args(), apart.grads());
  const auto a = over.args();
  auto g = over.grads();
  int pairs = 0;
  auto put = [&](auto& out, const auto& in) {
    if (out.empty()) return;
    REQUIRE(!in.empty());
    out.ptr = const_cast<std::remove_const_t<std::remove_pointer_t<decltype(in.ptr)>>*>(in.ptr);
    std::copy(std::begin(in.ext), std::end(in.ext), std::begin(out.ext));
    std::copy(std::begin(in.str), std::end(in.str), std::begin(out.str));
    ++pairs;
  };
  put(g.dq, a.q), put(g.dk, a.k), put(g.dv, a.v), put(g.dg, a.g), put(g.dgk, a.gk), put(g.dbeta, a.beta);
  put(g.db, a.b), put(g.dw, a.w), put(g.d_initial_state, a.initial_state), put(g.dA_log, a.gate.A_log);
  put(g.ddt_bias, a.gate.dt_bias), put(g.dlambda, a.ccq.lambda), put(g.dccq_log_decay, a.ccq.log_decay);
  put(g.dC0, a.ccq.C0), put(g.dm0, a.ccq.m0), put(g.dz0, a.ccq.z0);
  linea::backward<Rule, Read, Backend>(a, g);
  // The inputs now hold the gradients; their buffers have the gradient buffers' layout (contiguous; g_gamma's
  // [HV] under its stride-0 view).
  const auto& sep = apart.out();
  int compared = 0;
  const auto same = [&](const char* name, const auto& buffer, const auto& view) {
    if (buffer.size() == 0 || view.empty()) return;
    INFO("gradient ", name);
    CHECK(std::equal(buffer.values().begin(), buffer.values().end(), view.ptr));
    ++compared;
  };
  same("dq", sep.dq, g.dq), same("dk", sep.dk, g.dk), same("dv", sep.dv, g.dv), same("dgk", sep.dgk, g.dgk);
  if (opt.g_gamma) same("dg (g_gamma)", sep.dgamma, g.dg);
  else same("dg", sep.dg, g.dg);
  same("dbeta", sep.dbeta, g.dbeta), same("db", sep.db, g.db);
  same("dw", sep.dw, g.dw), same("d_initial_state", sep.dh0, g.d_initial_state), same("dA_log", sep.dA_log, g.dA_log);
  same("ddt_bias", sep.ddt_bias, g.ddt_bias), same("dlambda", sep.dlambda, g.dlambda);
  same("dccq_log_decay", sep.dccq_log_decay, g.dccq_log_decay), same("dC0", sep.dC0, g.dC0);
  same("dm0", sep.dm0, g.dm0), same("dz0", sep.dz0, g.dz0);
  CHECK(compared == pairs);
}

TEST_CASE("backward: every gradient may overwrite its own input exactly") {
  const backward_options ccq{.gate = true, .threads = 2, .ccq = {.initial_stats = true, .explicit_log_decay = true}};
  using decayed = read::ccq<read::decayed>;
  SUBCASE("gdn2, CCQ, in-kernel gates, cpu") { in_place_equals_separate<gdn2, decayed, backend::cpu>(ccq); }
  SUBCASE("gated_delta, g_gamma, generic") {
    in_place_equals_separate<gated_delta, read::identity, backend::generic>({.g_gamma = true});
  }
  SUBCASE("gated_delta, in-kernel gate, L2 norm, cpu") {
    in_place_equals_separate<gated_delta, decayed, backend::cpu>(
        {.qk_l2norm = true, .gate = true, .threads = 2, .ccq = {.initial_stats = true}});
  }
}

// The CPU backward's gradients against the reference's: the same entries non-finite, the rest within SPEC §6.
template <class Rule, class Read>
int same_poisoning_as_the_reference(backward_case<Rule, Read, float>& c) {
  linea::backward<Rule, Read>(c.args(), c.grads());
  auto& ref = c.reference_out();
  int poisoned = 0;
  const_cast<gradient_buffers<float>&>(c.out()).for_each(ref, [&](const char* name, const auto& x, const auto& r) {
    INFO("gradient ", name);
    REQUIRE(x.size() == r.size());
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double xi = double(x.data()[i]), ri = r.data()[i];
      CHECK(std::isfinite(xi) == std::isfinite(ri));
      if (!std::isfinite(ri)) ++poisoned;
      if (std::isfinite(xi) && std::isfinite(ri)) err += (xi - ri) * (xi - ri), norm += ri * ri;
    }
    CHECK(std::sqrt(err) <= gradient_tolerance_for<float>() * std::sqrt(norm));
  });
  return poisoned;
}

// A NaN or Inf in dL/do or dL/dS_T poisons exactly the gradient entries the reference's recurrence poisons (dq of
// that token, the tokens before it of that head, S_0's gradient); every other entry stays finite and accurate.
template <class Rule, class Read>
void poisons_like_the_reference(bool final_state) {
  backward_case<Rule, Read, float> c(small, {.chunk_size = 8});
  if (final_state) c.set_d_final_state(1, 1, 3, 2, std::nan(""));
  else c.set_d_o(0, 10, 0, 2, std::numeric_limits<double>::infinity());
  CHECK(same_poisoning_as_the_reference(c) > 0);
}

// A NaN or Inf in a forward input (q, k, v, a gate, S_0) at one entry, in both twins of the case.
enum class poisoned_input { q, k, v, gate, initial_state };

template <class Rule, class Read>
int poison_input(poisoned_input which, double value) {
  backward_case<Rule, Read, float> c(small, {.chunk_size = 8});
  auto a = c.args();
  auto r = c.ref_args();
  const auto poke = [&](const auto& low, const auto& ref, index_t at) {
    const_cast<float*>(low.ptr)[at] = float(value);
    const_cast<double*>(ref.ptr)[at] = value;
  };
  switch (which) {  // small: B = 2, T = 21, H = 1, HV = 2, K = 8, V = 6; token 10 of row 1, or S_0 entry 5
    case poisoned_input::q: poke(a.q, r.q, (21 + 10) * 8 + 3); break;
    case poisoned_input::k: poke(a.k, r.k, 10 * 8 + 3); break;
    case poisoned_input::v: poke(a.v, r.v, 10 * 12 + 2); break;
    case poisoned_input::gate:
      if (!a.g.empty()) poke(a.g, r.g, 10 * 2 + 1);
      else poke(a.gk, r.gk, 10 * 16 + 3);
      break;
    case poisoned_input::initial_state: poke(a.initial_state, r.initial_state, 5); break;
  }
  return same_poisoning_as_the_reference(c);
}

template <class Rule>
void poisons_from_inputs_like_the_reference() {
  INFO(rule_name<Rule>::value);
  const double inf = std::numeric_limits<double>::infinity();
  for (double value : {std::nan(""), inf, -inf})
    for (auto which : {poisoned_input::q, poisoned_input::k, poisoned_input::v, poisoned_input::gate,
                       poisoned_input::initial_state}) {
      if (which == poisoned_input::gate && (value == -inf || (std::is_same_v<typename Rule::decay, decay::none>)))
        continue;  // a log decay of −inf is a valid gate of 0 (tested above); the rule may have no gate
      INFO("input ", int(which), " = ", value);
      poison_input<Rule, read::identity>(which, value);  // (the additive rule keeps every gradient finite under S_0)
      poison_input<Rule, read::ccq<read::decayed>>(which, value);
    }
}

TEST_CASE("backward: a non-finite dL/do or dL/dS_T poisons only what the recurrence poisons") {
  SUBCASE("Inf in d_o, gated_delta") { poisons_like_the_reference<gated_delta, read::identity>(false); }
  SUBCASE("NaN in d_final_state, kda, CCQ") { poisons_like_the_reference<kda, read::ccq<read::decayed>>(true); }
}

// The additive-update rules (additive, simple_gla, gla) have no erase term: the reference multiplied it by its gate
// e = 0, and 0 · NaN poisoned every dk and dS below a NaN in S_0, k or v, where the CPU backward (and the
// mathematics: dk does not depend on S_0 without an erase term) kept them finite.
TEST_CASE("backward: a non-finite forward input poisons only what the recurrence poisons") {
  SUBCASE("additive") { poisons_from_inputs_like_the_reference<additive>(); }
  SUBCASE("gla") { poisons_from_inputs_like_the_reference<gla>(); }
  SUBCASE("gated_delta") { poisons_from_inputs_like_the_reference<gated_delta>(); }
  SUBCASE("additive: a NaN in S_0 reaches dq only (dk, dv, dS_0 do not depend on S_0)") {
    backward_case<additive, read::identity, float> c(small, {.chunk_size = 8});
    const_cast<float*>(c.args().initial_state.ptr)[5] = NAN;  // row 0, head 0, S_0[0][5]
    const_cast<double*>(c.ref_args().initial_state.ptr)[5] = NAN;
    CHECK(same_poisoning_as_the_reference(c) == 21);             // dq[0, t, 0, 0] for the 21 tokens
    CHECK((all_finite(c.out().dk) && all_finite(c.out().dv) && all_finite(c.out().dh0)));
  }
}

TEST_CASE("backward: a gradient may overwrite its own input (dq over q, dk over k, dv over v, dgk over gk)") {
  const case_shape shape{.B = 2, .T = 20, .H = 1, .HV = 2, .K = 8, .V = 8, .initial_state = true, .seed = 3};
  auto x = random_case<kda, float>::make(shape);
  tensor<float, 4> d_o(x.o.extents(), 0.25f), dq(x.q.extents()), dk(x.k.extents()), dv(x.v.extents()),
      dgk(x.gk.extents());
  auto a = x.args();
  a.qk_l2norm = true;  // dq, dk read the raw q, k again at the end
  a.chunk_size = 8;
  a.threads = 2;
  linea::backward<kda>(a, gradients<float>{.d_o = d_o, .dq = dq, .dk = dk, .dv = dv, .dgk = dgk});
  linea::backward<kda>(a, gradients<float>{.d_o = d_o, .dq = x.q, .dk = x.k, .dv = x.v, .dgk = x.gk});
  CHECK(x.q.values() == dq.values());
  CHECK(x.k.values() == dk.values());
  CHECK(x.v.values() == dv.values());
  CHECK(x.gk.values() == dgk.values());
}
