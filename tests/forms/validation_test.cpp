// The forms' own argument checks, on top of validate<Rule, Read> (tests/core/validation_test.cpp): the decode
// step's (forms/step.hpp: T = 1, state_indices, its state pool), the chunkwise form's (forms/chunkwise.hpp: chunk
// size, checkpoints' shape) and the inputs that belong to another form. One table row per bad input; each must
// throw a linea::error before anything is written, whose message names the argument (and the shapes).
#include <array>
#include <cstdint>
#include <vector>

#include <doctest/doctest.h>

#include "support/compare.hpp"
#include "support/rejection.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

using bad_input = bad_input_of<arguments<float>>;

// B = 2, H = 2, HV = 4, K = 16, V = 8, one token per row: the decode step's case.
const case_shape one_token{.B = 2, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true};

template <class Rule>
void recurrent_rejects(const bad_input& row) {
  auto c = sentinel_case<Rule>(row.shape.value());
  auto a = c.args();
  row.breaks(a);
  expect_rejected(c, a, [&] { recurrent<Rule, read::identity, backend::cpu>(a); }, row.words);
  expect_rejected(c, a, [&] { recurrent<Rule, read::identity, backend::generic>(a); }, row.words);
  expect_rejected(c, a, [&] { recurrent<Rule, read::identity, backend::reference>(a); }, row.words);
}

template <class Rule>
void step_rejects(const bad_input& row) {
  auto c = sentinel_case<Rule>(row.shape.value_or(one_token));
  auto a = c.args();
  row.breaks(a);
  expect_rejected(c, a, [&] { step<Rule, read::identity, backend::cpu>(a); }, row.words);
  expect_rejected(c, a, [&] { step<Rule, read::identity, backend::generic>(a); }, row.words);
}

template <class Rule>
void chunkwise_rejects(const bad_input& row) {
  auto c = sentinel_case<Rule>(row.shape.value());
  auto a = c.args();
  row.breaks(a);
  expect_rejected(c, a, [&] { chunkwise<Rule, read::identity, backend::cpu>(a); }, row.words);
  expect_rejected(c, a, [&] { chunkwise<Rule, read::identity, backend::generic>(a); }, row.words);
}

// backend::cpu alone (its thread count).
template <class Rule>
void cpu_chunkwise_rejects(const bad_input& row) {
  auto c = sentinel_case<Rule>(row.shape.value());
  auto a = c.args();
  row.breaks(a);
  expect_rejected(c, a, [&] { chunkwise<Rule, read::identity, backend::cpu>(a); }, row.words);
}

}  // namespace

// ---- inputs that belong to another form ----------------------------------------------------------------------

TEST_CASE("recurrent rejects the decode step's state_indices and the chunkwise form's checkpoints") {
  const case_shape shape{.B = 2, .T = 10, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true};
  tensor<float, 5> checkpoints({2, 1, 4, 16, 8}, float(sentinel));
  const std::vector<std::int32_t> idx = {0, 1};
  const bad_input table[] = {
      {.what = "checkpoints given to the recurrent form", .check = recurrent_rejects<delta>,
       .breaks = [&](auto& a) { a.checkpoints = checkpoints; }, .words = {"'checkpoints'", "chunkwise form only"},
       .shape = shape},
      {.what = "state_indices given to the recurrent form", .check = recurrent_rejects<delta>,
       .breaks = [&](auto& a) { a.state_indices = idx; }, .words = {"'state_indices'", "decode step"},
       .shape = shape},
  };
  check_rejected(table);
}

// ---- the decode step ---------------------------------------------------------------------------------------

TEST_CASE("step rejects more than one token, bad state indices and what a single step cannot do") {
  tensor<float, 4> big({3, 4, 16, 8}, float(sentinel)), pool({4, 4, 16, 8}, float(sentinel));
  tensor<float, 5> checkpoints({2, 1, 4, 16, 8}, float(sentinel));
  const std::vector<std::int32_t> out_of_range = {0, 2}, below = {-2, 0}, three = {0, 1, 1}, both = {0, 1},
                                   shared = {2, -1, 2};
  const std::vector<std::int64_t> cu = {0, 1};
  const bad_input table[] = {
      {.what = "T != 1", .check = step_rejects<gated_delta>, .breaks = [](auto&) {},
       .words = {"'q'", "[2, 2, 2, 16]", "T = 1"},
       .shape = case_shape{.B = 2, .T = 2, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true}},
      {.what = "a state index out of range (the pool has N = 2 rows)", .check = step_rejects<gated_delta>,
       .breaks = [&](auto& a) { a.state_indices = out_of_range; }, .words = {"'state_indices[1]'", "= 2", "N = 2"}},
      {.what = "a state index below -1", .check = step_rejects<gated_delta>,
       .breaks = [&](auto& a) { a.state_indices = below; }, .words = {"'state_indices[0]'", "-2"}},
      {.what = "state_indices off its entries' alignment (read through an int32 pointer)", .check = step_rejects<gated_delta>,
       .breaks = [&](auto& a) { a.state_indices = std::span<const std::int32_t>(misaligned(both.data(), 1), 2); },
       .words = {"'state_indices'", "int32", "alignment"}},
      {.what = "state_indices with the wrong count", .check = step_rejects<gated_delta>,
       .breaks = [&](auto& a) { a.state_indices = three; }, .words = {"'state_indices'", "3 entries", "B = 2"}},
      {.what = "state_indices without a state pool", .check = step_rejects<gated_delta>,
       .breaks = [&](auto& a) { a.final_state = {}, a.state_indices = both; }, .words = {"'state_indices'", "pool"},
       .shape = case_shape{.B = 2, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8}},
      {.what = "initial and final pools of different sizes", .check = step_rejects<gated_delta>,
       .breaks = [&](auto& a) { a.final_state = big, a.state_indices = both; },
       .words = {"'final_state'", "[3, 4, 16, 8]", "[2, 4, 16, 8]"}},
      {.what = "cu_seqlens given", .check = step_rejects<gated_delta>, .breaks = [&](auto& a) { a.cu_seqlens = cu; },
       .words = {"'cu_seqlens'", "decode step"},
       .shape = case_shape{.B = 1, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8, .initial_state = true}},
      {.what = "checkpoints given", .check = step_rejects<gated_delta>,
       .breaks = [&](auto& a) { a.checkpoints = checkpoints; }, .words = {"'checkpoints'", "chunkwise form only"}},
      {.what = "normalize given", .check = step_rejects<additive>, .breaks = [](auto& a) { a.normalize = true; },
       .words = {"'normalize'", "decode step"}},
      {.what = "two rows naming the same state, which both would write", .check = step_rejects<gated_delta>,
       .breaks = [&](auto& a) { a.initial_state = pool, a.final_state = pool, a.state_indices = shared; },
       .words = {"'state_indices'", "state 2", "more than one"},
       .shape = case_shape{.B = 3, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8}},
  };
  check_rejected(table);
}

TEST_CASE("step: several -1 rows are allowed") {
  auto c = random_case<gated_delta, float>::make({.B = 3, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8});
  tensor<float, 4> pool({2, 4, 16, 8}, 0.f);
  const std::vector<std::int32_t> idx = {-1, 1, -1};
  auto a = c.args();
  a.initial_state = pool;
  a.final_state = pool;
  a.state_indices = idx;
  CHECK_NOTHROW(step<gated_delta>(a));
}

TEST_CASE("step: rows may share a state they only read (no final_state)") {
  auto c = random_case<gated_delta, float>::make({.B = 3, .T = 1, .H = 2, .HV = 4, .K = 16, .V = 8});
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

// ---- the chunkwise form ------------------------------------------------------------------------------------

TEST_CASE("chunkwise rejects unsupported chunk sizes, misshapen checkpoints and the decode step's inputs") {
  const case_shape one_sequence{.B = 1, .T = 40, .H = 1, .HV = 1, .K = 8, .V = 8};
  // Packed lengths 40 and 70 at chunk size 32: 2 and 3 chunks, so the checkpoints are [2, 3, 2, 8, 4].
  const case_shape two_sequences{.H = 1, .HV = 2, .K = 8, .V = 4, .seqlens = {40, 70}};
  const case_shape two_rows{.B = 2, .T = 20, .H = 1, .HV = 1, .K = 8, .V = 8};
  tensor<float, 5> too_few({2, 2, 2, 8, 4}, float(sentinel)), too_many({2, 4, 2, 8, 4}, float(sentinel)),
      one_sequence_only({1, 3, 2, 8, 4}, float(sentinel)), transposed({2, 3, 2, 4, 8}, float(sentinel));
  const std::vector<std::int32_t> idx{0, 1};
  const bad_input table[] = {
      {.what = "chunk_size 0", .check = chunkwise_rejects<gated_delta>, .breaks = [](auto& a) { a.chunk_size = 0; },
       .words = {"'chunk_size' = 0"}, .shape = one_sequence},
      {.what = "chunk_size 8", .check = chunkwise_rejects<gated_delta>, .breaks = [](auto& a) { a.chunk_size = 8; },
       .words = {"'chunk_size' = 8", "16, 32, 64 or 128"}, .shape = one_sequence},
      {.what = "chunk_size 48", .check = chunkwise_rejects<gated_delta>, .breaks = [](auto& a) { a.chunk_size = 48; },
       .words = {"'chunk_size' = 48", "16, 32, 64 or 128"}, .shape = one_sequence},
      {.what = "chunk_size 50", .check = chunkwise_rejects<gated_delta>, .breaks = [](auto& a) { a.chunk_size = 50; },
       .words = {"'chunk_size' = 50", "16, 32, 64 or 128"}, .shape = one_sequence},
      {.what = "chunk_size 256", .check = chunkwise_rejects<gated_delta>,
       .breaks = [](auto& a) { a.chunk_size = 256; }, .words = {"'chunk_size' = 256", "16, 32, 64 or 128"},
       .shape = one_sequence},
      {.what = "checkpoints with one chunk too few", .check = chunkwise_rejects<kda>,
       .breaks = [&](auto& a) { a.chunk_size = 32, a.checkpoints = too_few; },
       .words = {"'checkpoints'", "[2, 2, 2, 8, 4]", "[2, 3, 2, 8, 4]"}, .shape = two_sequences},
      {.what = "checkpoints with one chunk too many", .check = chunkwise_rejects<kda>,
       .breaks = [&](auto& a) { a.chunk_size = 32, a.checkpoints = too_many; },
       .words = {"'checkpoints'", "[2, 4, 2, 8, 4]", "[2, 3, 2, 8, 4]"}, .shape = two_sequences},
      {.what = "checkpoints for one sequence of two", .check = chunkwise_rejects<kda>,
       .breaks = [&](auto& a) { a.chunk_size = 32, a.checkpoints = one_sequence_only; },
       .words = {"'checkpoints'", "[1, 3, 2, 8, 4]", "[2, 3, 2, 8, 4]"}, .shape = two_sequences},
      {.what = "checkpoints with K and V swapped", .check = chunkwise_rejects<kda>,
       .breaks = [&](auto& a) { a.chunk_size = 32, a.checkpoints = transposed; },
       .words = {"'checkpoints'", "[2, 3, 2, 4, 8]", "[2, 3, 2, 8, 4]"}, .shape = two_sequences},
      {.what = "the decode step's state_indices", .check = chunkwise_rejects<gla>,
       .breaks = [&](auto& a) { a.state_indices = idx; }, .words = {"'state_indices'", "decode step"},
       .shape = two_rows},
      {.what = "the rule's own check first: gla without its per-key gate", .check = chunkwise_rejects<gla>,
       .breaks = [](auto& a) { a.gk = {}; }, .words = {"'gk'", "missing", "gla"}, .shape = two_rows},
      {.what = "a negative thread count", .check = cpu_chunkwise_rejects<gla>,
       .breaks = [](auto& a) { a.threads = -1; }, .words = {"'threads' = -1"}, .shape = two_rows},
  };
  check_rejected(table);
}

TEST_CASE("chunkwise accepts chunk sizes 16, 32, 64, 128 and checkpoints [N, max_chunks, HV, K, V]") {
  auto c = random_case<gated_delta, float>::make({.B = 1, .T = 40, .H = 1, .HV = 1, .K = 8, .V = 8});
  for (index_t C : {16, 32, 64, 128}) {
    auto a = c.args();
    a.chunk_size = C;
    CHECK_NOTHROW(chunkwise<gated_delta>(a));
  }
  auto k = random_case<kda, float>::make({.H = 1, .HV = 2, .K = 8, .V = 4, .seqlens = {40, 70}});
  auto a = k.args();
  a.chunk_size = 32;
  tensor<float, 5> good({2, 3, 2, 8, 4});
  a.checkpoints = good;
  CHECK_NOTHROW(chunkwise<kda>(a));
}
