// validate<Rule, Read> (core/validate.hpp): every bad argument it rejects, one table row each, on the recurrent
// form of backend::cpu, backend::generic and backend::reference. Each row must throw a linea::error before
// anything is written, whose message names the argument (and the shapes where they are the problem); o,
// residual and final_state are pre-filled with a sentinel and must come back untouched. The forms' own
// checks (decode step, chunkwise, recurrent) are in tests/forms/validation_test.cpp.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include <doctest/doctest.h>

#include <linea/segments/segmented.hpp>

#include "support/rejection.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

using bad_input = bad_input_of<arguments<float>>;

// B = 2, T = 10, H = 2, HV = 4, K = 16, V = 8: every shape in a message is recognisable.
const case_shape base{.B = 2, .T = 10, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true};
// One packed batch row (cu_seqlens rows).
const case_shape packed{.B = 1, .T = 10, .H = 2, .HV = 4, .K = 16, .V = 8};

// The recurrent form of every host backend must reject the row's arguments.
template <class Rule>
void recurrent_rejects(const bad_input& row) {
  auto c = sentinel_case<Rule>(row.shape.value_or(base));
  auto a = c.args();
  row.breaks(a);
  expect_rejected(c, a, [&] { recurrent<Rule, read::identity, backend::cpu>(a); }, row.words);
  expect_rejected(c, a, [&] { recurrent<Rule, read::identity, backend::generic>(a); }, row.words);
  expect_rejected(c, a, [&] { recurrent<Rule, read::identity, backend::reference>(a); }, row.words);
}

}  // namespace

TEST_CASE("validate: a shape that does not match, named with both shapes") {
  const bad_input table[] = {
      {.what = "k with another shape than q", .check = recurrent_rejects<kda>,
       .breaks = [](auto& a) { a.k = with_extent(a.k, 3, 15); }, .words = {"'k'", "[2, 10, 2, 15]", "[2, 10, 2, 16]"}},
      {.what = "v with another T than q", .check = recurrent_rejects<kda>,
       .breaks = [](auto& a) { a.v = with_extent(a.v, 1, 9); }, .words = {"'v'", "[2, 9, 4, 8]", "[2, 10, 2, 16]"}},
      {.what = "o with another shape than v", .check = recurrent_rejects<kda>,
       .breaks = [](auto& a) { a.o = with_extent(a.o, 3, 7); }, .words = {"'o'", "[2, 10, 4, 7]", "[2, 10, 4, 8]"}},
      {.what = "g with the wrong number of heads", .check = recurrent_rejects<gated_delta>,
       .breaks = [](auto& a) { a.g = with_extent(a.g, 2, 2); }, .words = {"'g'", "[2, 10, 2]", "[2, 10, 4]"}},
      {.what = "gk with the wrong key width", .check = recurrent_rejects<kda>,
       .breaks = [](auto& a) { a.gk = with_extent(a.gk, 3, 8); }, .words = {"'gk'", "[2, 10, 4, 8]", "[2, 10, 4, 16]"}},
      {.what = "beta with the wrong length", .check = recurrent_rejects<delta>,
       .breaks = [](auto& a) { a.beta = with_extent(a.beta, 1, 5); }, .words = {"'beta'", "[2, 5, 4]", "[2, 10, 4]"}},
      {.what = "GDN-2 erase gate b with the wrong width", .check = recurrent_rejects<gdn2>,
       .breaks = [](auto& a) { a.b = with_extent(a.b, 3, 8); }, .words = {"'b'", "[2, 10, 4, 8]", "[2, 10, 4, 16]"}},
      {.what = "GDN-2 write gate w with the wrong width", .check = recurrent_rejects<gdn2>,
       .breaks = [](auto& a) { a.w = with_extent(a.w, 3, 16); }, .words = {"'w'", "[2, 10, 4, 16]", "[2, 10, 4, 8]"}},
      {.what = "residual with the wrong shape", .check = recurrent_rejects<delta>,
       .breaks = [](auto& a) { a.residual = with_extent(a.residual, 2, 2); },
       .words = {"'residual'", "[2, 10, 2, 8]", "[2, 10, 4, 8]"}},
      {.what = "HV not a multiple of H", .check = recurrent_rejects<delta>, .breaks = [](auto&) {},
       .words = {"'v'", "HV = 3", "H = 2", "[2, 10, 3, 8]", "[2, 10, 2, 16]"},
       .shape = case_shape{.B = 2, .T = 10, .H = 2, .HV = 3, .K = 16, .V = 8}},
      {.what = "a negative extent", .check = recurrent_rejects<additive>,
       .breaks = [](auto& a) { a.q = with_extent(a.q, 1, -1); }, .words = {"'q'", "[2, -1, 2, 16]"}},
  };
  check_rejected(table);
}

TEST_CASE("validate: the gates a rule needs are given, and only those") {
  // Gates of the right shape for the base case, from rules that do take them.
  tensor<float, 3> g({2, 10, 4}, 0.f), beta({2, 10, 4}, 0.5f);
  tensor<float, 4> gk({2, 10, 4, 16}, 0.f), b({2, 10, 4, 16}, 0.5f), w({2, 10, 4, 8}, 0.5f);
  const bad_input table[] = {
      {.what = "the scalar gate g missing for gated_delta", .check = recurrent_rejects<gated_delta>,
       .breaks = [](auto& a) { a.g = {}; }, .words = {"'g'", "missing", "gated_delta_rule"}},
      {.what = "the per-key gate gk missing for kda", .check = recurrent_rejects<kda>,
       .breaks = [](auto& a) { a.gk = {}; }, .words = {"'gk'", "missing", "kda"}},
      {.what = "beta missing for delta", .check = recurrent_rejects<delta>,
       .breaks = [](auto& a) { a.beta = {}; }, .words = {"'beta'", "missing", "delta_rule"}},
      {.what = "the erase gate b missing for gdn2", .check = recurrent_rejects<gdn2>,
       .breaks = [](auto& a) { a.b = {}; }, .words = {"'b'", "missing", "gdn2"}},
      {.what = "the write gate w missing for gdn2", .check = recurrent_rejects<gdn2>,
       .breaks = [](auto& a) { a.w = {}; }, .words = {"'w'", "missing", "gdn2"}},
      {.what = "a scalar gate g given to additive, which takes no gate", .check = recurrent_rejects<additive>,
       .breaks = [&](auto& a) { a.g = g; }, .words = {"'g'", "must not be given", "linear_attn", "[2, 10, 4]"}},
      {.what = "a per-key gate gk given to gated_delta, which takes a scalar gate",
       .check = recurrent_rejects<gated_delta>, .breaks = [&](auto& a) { a.gk = gk; },
       .words = {"'gk'", "must not be given", "gated_delta_rule"}},
      {.what = "beta given to gla, which takes none", .check = recurrent_rejects<gla>,
       .breaks = [&](auto& a) { a.beta = beta; }, .words = {"'beta'", "must not be given", "gla"}},
      {.what = "beta given to gdn2, which takes b and w instead", .check = recurrent_rejects<gdn2>,
       .breaks = [&](auto& a) { a.beta = beta; }, .words = {"'beta'", "must not be given", "gdn2"}},
      {.what = "the GDN-2 erase gate b given to kda", .check = recurrent_rejects<kda>,
       .breaks = [&](auto& a) { a.b = b; }, .words = {"'b'", "must not be given", "kda"}},
      {.what = "the GDN-2 write gate w given to kda", .check = recurrent_rejects<kda>,
       .breaks = [&](auto& a) { a.w = w; }, .words = {"'w'", "must not be given", "kda"}},
      {.what = "beta_act set for a rule without beta", .check = recurrent_rejects<simple_gla>,
       .breaks = [](auto& a) { a.beta_act = beta_activation::sigmoid; }, .words = {"'beta_act'", "simple_gla"}},
      {.what = "beta_act holding no activation (an integer cast to the enum)", .check = recurrent_rejects<gated_delta>,
       .breaks = [](auto& a) { a.beta_act = static_cast<beta_activation>(7); }, .words = {"'beta_act'", "7"}},
      {.what = "normalize set for a rule other than additive", .check = recurrent_rejects<simple_gla>,
       .breaks = [](auto& a) { a.normalize = true; }, .words = {"'normalize'", "simple_gla"}},
  };
  check_rejected(table);
}

TEST_CASE("validate: in-kernel gate arguments (gate.A_log, gate.dt_bias, gate.lower_bound)") {
  const std::vector<float> A4(4, 0.f), A2(2, 0.f), dt4(4, 0.f), dt64(64, 0.f);
  const bad_input table[] = {
      {.what = "gate.A_log given to a rule without decay", .check = recurrent_rejects<delta>,
       .breaks = [&](auto& a) { a.gate.A_log = contiguous<1>(A4.data(), {4}); },
       .words = {"'gate.A_log'", "delta_rule"}},
      {.what = "gate.A_log with the wrong length", .check = recurrent_rejects<gated_delta>,
       .breaks = [&](auto& a) { a.gate.A_log = contiguous<1>(A2.data(), {2}); },
       .words = {"'gate.A_log'", "[2]", "[4]"}},
      {.what = "gate.dt_bias [HV] given for a per-key gate, which needs [HV*K]", .check = recurrent_rejects<kda>,
       .breaks = [&](auto& a) {
         a.gate.A_log = contiguous<1>(A4.data(), {4});
         a.gate.dt_bias = contiguous<1>(dt4.data(), {4});
       },
       .words = {"'gate.dt_bias'", "[4]", "[64]"}},
      {.what = "gate.dt_bias without gate.A_log", .check = recurrent_rejects<kda>,
       .breaks = [&](auto& a) { a.gate.dt_bias = contiguous<1>(dt64.data(), {64}); },
       .words = {"'gate.dt_bias'", "A_log"}},
      {.what = "gate.lower_bound without gate.A_log", .check = recurrent_rejects<kda>,
       .breaks = [](auto& a) { a.gate.lower_bound = -5.f; }, .words = {"'gate.lower_bound'", "A_log"}},
      {.what = "gate.lower_bound NaN (every gate would be NaN)", .check = recurrent_rejects<kda>,
       .breaks = [&](auto& a) {
         a.gate.A_log = contiguous<1>(A4.data(), {4});
         a.gate.lower_bound = std::nanf("");
       },
       .words = {"'gate.lower_bound'", "not finite"}},
      {.what = "gate.lower_bound positive (every gate a growth factor > 1)", .check = recurrent_rejects<kda>,
       .breaks = [&](auto& a) {
         a.gate.A_log = contiguous<1>(A4.data(), {4});
         a.gate.lower_bound = 5.f;
       },
       .words = {"'gate.lower_bound'", "= 5 is positive"}},
  };
  check_rejected(table);
}

TEST_CASE("validate: initial and final states") {
  tensor<float, 4> transposed({2, 4, 8, 16}, float(sentinel));
  const std::vector<std::int64_t> three_sequences = {0, 3, 7, 10};
  const bad_input table[] = {
      {.what = "initial_state with the wrong shape", .check = recurrent_rejects<kda>,
       .breaks = [](auto& a) { a.initial_state = with_extent(a.initial_state, 3, 7); },
       .words = {"'initial_state'", "[2, 4, 16, 7]", "[2, 4, 16, 8]"}},
      {.what = "initial_state with the wrong number of sequences", .check = recurrent_rejects<kda>,
       .breaks = [](auto& a) { a.initial_state = with_extent(a.initial_state, 0, 1); },
       .words = {"'initial_state'", "[1, 4, 16, 8]", "[2, 4, 16, 8]"}},
      {.what = "final_state with the wrong shape (and a sentinel of its own)", .check = recurrent_rejects<kda>,
       .breaks = [&](auto& a) { a.final_state = transposed; },
       .words = {"'final_state'", "[2, 4, 8, 16]", "[2, 4, 16, 8]"}},
      {.what = "initial_state with B rows instead of one per packed sequence", .check = recurrent_rejects<delta>,
       .breaks = [&](auto& a) { a.cu_seqlens = three_sequences; },
       .words = {"'initial_state'", "[1, 4, 16, 8]", "[3, 4, 16, 8]"},
       .shape = case_shape{.B = 1, .T = 10, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true}},
  };
  check_rejected(table);
}

TEST_CASE("validate: cu_seqlens") {
  const std::vector<std::int64_t> from_1 = {1, 4, 10}, decreasing = {0, 6, 4, 10}, short_of_T = {0, 4, 9},
                                  valid = {0, 4, 10}, one_entry = {0};
  const bad_input table[] = {
      {.what = "cu_seqlens not starting at 0", .check = recurrent_rejects<gated_delta>,
       .breaks = [&](auto& a) { a.cu_seqlens = from_1; },
       .words = {"'cu_seqlens'", "start at 0", "cu_seqlens[0] = 1"}, .shape = packed},
      {.what = "cu_seqlens decreasing", .check = recurrent_rejects<gated_delta>,
       .breaks = [&](auto& a) { a.cu_seqlens = decreasing; },
       .words = {"'cu_seqlens'", "decrease", "cu_seqlens[2] = 4"}, .shape = packed},
      {.what = "cu_seqlens not ending at T", .check = recurrent_rejects<gated_delta>,
       .breaks = [&](auto& a) { a.cu_seqlens = short_of_T; }, .words = {"'cu_seqlens'", "T = 10", "9"},
       .shape = packed},
      {.what = "cu_seqlens with B != 1", .check = recurrent_rejects<gated_delta>,
       .breaks = [&](auto& a) { a.cu_seqlens = valid; }, .words = {"'cu_seqlens'", "B = 1", "[2, 10, 2, 16]"},
       .shape = case_shape{.B = 2, .T = 10, .H = 2, .HV = 4, .K = 16, .V = 8}},
      {.what = "cu_seqlens off its entries' alignment (read through an int64 pointer)", .check = recurrent_rejects<gated_delta>,
       .breaks = [&](auto& a) { a.cu_seqlens = std::span<const std::int64_t>(misaligned(valid.data(), 4), 3); },
       .words = {"'cu_seqlens'", "3 entries of int64", "alignment"}, .shape = packed},
      {.what = "cu_seqlens with a single entry", .check = recurrent_rejects<gated_delta>,
       .breaks = [&](auto& a) { a.cu_seqlens = one_entry; }, .words = {"'cu_seqlens'", "1 entries"},
       .shape = case_shape{.B = 1, .T = 0, .H = 2, .HV = 4, .K = 16, .V = 8}},
  };
  check_rejected(table);
}

TEST_CASE("validate: required inputs and outputs not given, or given without data") {
  const bad_input table[] = {
      {.what = "q not given", .check = recurrent_rejects<additive>, .breaks = [](auto& a) { a.q = {}; },
       .words = {"'q'", "missing"}},
      {.what = "k not given", .check = recurrent_rejects<additive>, .breaks = [](auto& a) { a.k = {}; },
       .words = {"'k'", "missing"}},
      {.what = "v not given", .check = recurrent_rejects<additive>, .breaks = [](auto& a) { a.v = {}; },
       .words = {"'v'", "missing"}},
      {.what = "o not given", .check = recurrent_rejects<additive>, .breaks = [](auto& a) { a.o = {}; },
       .words = {"'o'", "missing"}},
      {.what = "q with a shape but a null data pointer", .check = recurrent_rejects<additive>,
       .breaks = [](auto& a) { a.q.ptr = nullptr; }, .words = {"'q'", "null", "[2, 10, 2, 16]"}},
      {.what = "k with a shape but a null data pointer", .check = recurrent_rejects<additive>,
       .breaks = [](auto& a) { a.k.ptr = nullptr; }, .words = {"'k'", "null", "[2, 10, 2, 16]"}},
      {.what = "v with a shape but a null data pointer", .check = recurrent_rejects<additive>,
       .breaks = [](auto& a) { a.v.ptr = nullptr; }, .words = {"'v'", "null", "[2, 10, 4, 8]"}},
      {.what = "o with a shape but a null data pointer", .check = recurrent_rejects<additive>,
       .breaks = [](auto& a) { a.o.ptr = nullptr; }, .words = {"'o'", "null", "[2, 10, 4, 8]"}},
      {.what = "an optional input (initial_state) with a shape but a null data pointer",
       .check = recurrent_rejects<kda>, .breaks = [](auto& a) { a.initial_state.ptr = nullptr; },
       .words = {"'initial_state'", "null", "[2, 4, 16, 8]"}},
      // Extents and strides that cannot describe memory: the byte ranges of the aliasing check would wrap.
      {.what = "q with a stride of 2^61 elements", .check = recurrent_rejects<additive>,
       .breaks = [](auto& a) { a.q.str[1] = index_t(1) << 61; }, .words = {"'q'", "[2, 10, 2, 16]", "address space"}},
      {.what = "o with a stride of -2^62 elements", .check = recurrent_rejects<additive>,
       .breaks = [](auto& a) { a.o.str[0] = -(index_t(1) << 62); }, .words = {"'o'", "address space"}},
      {.what = "v reaching below address 0 (a negative stride from a low pointer)", .check = recurrent_rejects<additive>,
       .breaks = [](auto& a) { a.v.str[1] = -(index_t(1) << 46); }, .words = {"'v'", "address space"}},
      // A pointer that is not a multiple of the element's alignment (numpy makes such views): refused before any
      // element is read or written. (An output's row would be checked for sentinels through its broken view; the
      // backward's dq row in backward_validation_test covers an output.)
      {.what = "q starting 2 bytes past an element boundary", .check = recurrent_rejects<additive>,
       .breaks = [](auto& a) { a.q.ptr = misaligned(a.q.ptr, 2); },
       .words = {"'q'", "[2, 10, 2, 16]", "alignment"}},
      {.what = "v starting 1 byte past an element boundary", .check = recurrent_rejects<additive>,
       .breaks = [](auto& a) { a.v.ptr = misaligned(a.v.ptr, 1); }, .words = {"'v'", "[2, 10, 4, 8]", "alignment"}},
      {.what = "an optional input (initial_state) 2 bytes off", .check = recurrent_rejects<kda>,
       .breaks = [](auto& a) { a.initial_state.ptr = misaligned(a.initial_state.ptr, 2); },
       .words = {"'initial_state'", "alignment"}},
      // Sizes whose products overflow a 64-bit count (stride-0 axes make such views out of one element).
      {.what = "K = 2^62 through stride-0 q and k", .check = recurrent_rejects<additive>,
       .breaks = [](auto& a) {
         for (auto* x : {&a.q, &a.k}) x->ext[3] = index_t(1) << 62, x->str[3] = 0;
       },
       .words = {"K = 4611686018427387904", "overflow"}},
      {.what = "B = 2^62 with T = 0 (no elements, but N·HV·K·V overflows)", .check = recurrent_rejects<additive>,
       .breaks = [](auto& a) {
         for (auto* x : {&a.q, &a.k, &a.v}) x->ext[0] = index_t(1) << 62, x->ext[1] = 0;
         a.o.ext[0] = index_t(1) << 62, a.o.ext[1] = 0;
       },
       .words = {"B = 4611686018427387904", "overflow"}},
      {.what = "an optional input (gk) with a stride past the address space", .check = recurrent_rejects<gla>,
       .breaks = [](auto& a) { a.gk.str[3] = std::numeric_limits<index_t>::max() / 4; },
       .words = {"'gk'", "address space"}},
  };
  check_rejected(table);
}

TEST_CASE("validate: options, and the CCQ read's arguments given to the identity read") {
  tensor<float, 3> lambda({2, 10, 4}, 0.5f);
  tensor<float, 4> C({2, 4, 16, 16});
  const bad_input table[] = {
      {.what = "chunk_size zero", .check = recurrent_rejects<delta>, .breaks = [](auto& a) { a.chunk_size = 0; },
       .words = {"'chunk_size'", "0"}},
      {.what = "chunk_size negative", .check = recurrent_rejects<delta>,
       .breaks = [](auto& a) { a.chunk_size = -64; }, .words = {"'chunk_size'", "-64"}},
      {.what = "scale not finite", .check = recurrent_rejects<delta>,
       .breaks = [](auto& a) { a.scale = std::numeric_limits<double>::quiet_NaN(); }, .words = {"'scale'"}},
      {.what = "scale finite in double but not in the float32 compute type", .check = recurrent_rejects<delta>,
       .breaks = [](auto& a) { a.scale = 1e300; }, .words = {"'scale' = 1e+300 is not finite", "float32"}},
      {.what = "CCQ lambda given to the identity read", .check = recurrent_rejects<delta>,
       .breaks = [&](auto& a) { a.ccq.lambda = lambda; }, .words = {"'ccq.lambda'", "identity read"}},
      {.what = "CCQ statistics given to the identity read", .check = recurrent_rejects<delta>,
       .breaks = [&](auto& a) { a.ccq.C = C; }, .words = {"'ccq.C'", "identity read"}},
  };
  check_rejected(table);
}

TEST_CASE("T = 0 with null data pointers (as torch's empty tensors) is a valid no-op") {
  auto c = sentinel_case<kda>(base);
  auto a = c.args();
  // Views with shapes [2, 0, ...] and no data at all.
  for (auto* x : {&a.q, &a.k, &a.v, &a.gk}) *x = with_extent(*x, 1, 0), x->ptr = nullptr;
  a.beta = with_extent(a.beta, 1, 0), a.beta.ptr = nullptr;
  a.o = with_extent(a.o, 1, 0), a.o.ptr = nullptr;
  a.residual = with_extent(a.residual, 1, 0), a.residual.ptr = nullptr;
  recurrent<kda>(a);
  CHECK(std::equal(c.ht.values().begin(), c.ht.values().end(), c.h0.values().begin()));
}

// With T = 0 and no state asked for a call writes nothing (core/empty_call.hpp), however many batch rows its views
// of no elements claim: B = 2⁴⁰ here. Each form used to walk its N·HV empty items first (hours; this test hung).
// The backward still zeroes dA_log, the one gradient without tokens that it was given.
TEST_CASE("T = 0 over 2^40 batch rows, no states asked for: every host form and the backward return at once") {
  const index_t B = index_t(1) << 40, H = 2, HV = 4, K = 16, V = 8;
  const std::vector<float> A_log(HV, 0.f);
  arguments<float> a;
  a.q = strided<4>(static_cast<const float*>(nullptr), {B, 0, H, K}, {0, 0, 0, 0});
  a.k = a.q;
  a.v = strided<4>(static_cast<const float*>(nullptr), {B, 0, HV, V}, {0, 0, 0, 0});
  a.gk = strided<4>(static_cast<const float*>(nullptr), {B, 0, HV, K}, {0, 0, 0, 0});
  a.beta = strided<3>(static_cast<const float*>(nullptr), {B, 0, HV}, {0, 0, 0});
  a.o = strided<4>(static_cast<float*>(nullptr), {B, 0, HV, V}, {0, 0, 0, 0});
  a.gate.A_log = contiguous<1>(A_log.data(), {HV});
  recurrent<kda, read::identity, backend::cpu>(a);
  recurrent<kda, read::identity, backend::generic>(a);
  recurrent<kda, read::identity, backend::reference>(a);
  chunkwise<kda, read::identity, backend::cpu>(a);
  chunkwise<kda, read::identity, backend::generic>(a);
  segmented_chunkwise<kda, read::identity, backend::cpu>(a, 64);

  std::vector<float> dA_log(HV, float(sentinel));
  gradients<float> g{.d_o = a.v};
  g.dA_log = contiguous<1>(dA_log.data(), {HV});
  backward<kda, read::identity, backend::cpu>(a, g);
  CHECK(std::all_of(dA_log.begin(), dA_log.end(), [](float x) { return x == 0.f; }));
  std::fill(dA_log.begin(), dA_log.end(), float(sentinel));
  backward<kda, read::identity, backend::reference>(a, g);
  CHECK(std::all_of(dA_log.begin(), dA_log.end(), [](float x) { return x == 0.f; }));

  // The chunkwise form with checkpoints of no elements ([B, 0, HV, K, V]): its expected shape's chunk count walked
  // the N sequences (validate_chunkwise's max_chunks; 2^30 rows took 3 s, 2^40 about 48 min).
  a.checkpoints = strided<5>(static_cast<float*>(nullptr), {B, 0, HV, K, V}, {0, 0, 0, 0, 0});
  chunkwise<kda, read::identity, backend::cpu>(a);
  chunkwise<kda, read::identity, backend::generic>(a);
  CHECK(max_chunks(a, validate<kda, read::identity>(a)) == 0);
}
