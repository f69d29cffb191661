// Context parallelism (include/linea/segments/context_parallel.hpp) with simulated ranks: R threads of this process,
// each holding its shard of the sequences along T, exchanging their summaries through cp::local_group — the code a
// NCCL communicator runs, with another transport. The sharded call equals the float64 reference within SPEC §5 and
// the unsplit chunkwise form, for every rule, 1 to 4 ranks, uneven and empty shards.
#include <thread>

#include <doctest/doctest.h>

#include <linea/segments/context_parallel.hpp>

#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/rejection.hpp"
#include "support/rules.hpp"
#include "support/slice.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

// The arguments of rank r: tokens [t0, t1) of every row; the initial state on rank 0, the final state on the last.
template <class A>
A shard(const A& whole, index_t t0, index_t t1, int r, int ranks) {
  A a = time_slice_args(whole, t0, t1);
  if (r != 0) a.initial_state = {};
  if (r != ranks - 1) a.final_state = {};
  return a;
}

// `cuts`: the shard boundaries along T (ranks = cuts.size() - 1).
// `piece`: the length each rank cuts its shard into (0: one piece per rank).
template <class Rule>
void check_sharded(const case_shape& shape, const std::vector<index_t>& cuts, index_t piece = 0) {
  const int ranks = static_cast<int>(cuts.size()) - 1;
  auto split = random_case<Rule, float>::make(shape);
  auto whole = random_case<Rule, float>::make(shape);
  auto ref = split.template cast<double>();
  cp::local_group group(ranks);
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> failed(static_cast<std::size_t>(ranks));
  const auto all = split.args();
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        context_parallel<Rule>(shard(all, cuts[r], cuts[r + 1], r, ranks), group.rank(r), piece);
      } catch (...) {
        failed[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : failed)
    if (e) std::rethrow_exception(e);
  chunkwise<Rule>(whole.args());
  reference::recurrent<Rule>(ref.args());
  INFO(std::string(rule_name<Rule>::value), " ranks=", ranks, " piece=", piece, " ", describe_shape(split.shape));
  const double tol = tolerance_for<float>(shape.T);
  CHECK(relative_error(split.o, ref.o) <= tol);
  CHECK(relative_error(split.residual, ref.residual) <= tol);
  CHECK(relative_error(split.ht, ref.ht) <= tol);
  CHECK(relative_error(split.o, whole.o) <= tol);
  CHECK(relative_error(split.ht, whole.ht) <= tol);
}

}  // namespace

TEST_CASE_TEMPLATE("context parallel over simulated ranks equals the unsplit forward", Rule, LINEA_ALL_RULES) {
  const case_shape kv{.B = 2, .T = 200, .H = 1, .HV = 2, .K = 16, .V = 8, .initial_state = true};
  check_sharded<Rule>(kv, {0, 200});                   // one rank: the forward itself, through the exchange
  check_sharded<Rule>(kv, {0, 64, 200});               // two
  check_sharded<Rule>(kv, {0, 70, 70, 131, 200});      // four, one of them empty
  // K = V (pass M writes into o), GVA, no initial state, strong decays.
  check_sharded<Rule>({.B = 1, .T = 150, .H = 1, .HV = 2, .K = 8, .V = 8, .gates = gate_range::extreme}, {0, 50, 100, 150});
  // Each rank's shard cut into pieces of 32 tokens (3, 0, 2 and 3 pieces): passes over all its pieces, the pieces
  // folded into the rank's summary, then S_init through them; one and two ranks too. (A shard of B > 1 rows is not
  // one packed row — its batch stride is the whole T's — so it runs as one piece: the case above.)
  check_sharded<Rule>({.B = 1, .T = 200, .H = 1, .HV = 2, .K = 16, .V = 8, .initial_state = true}, {0, 70, 70, 131, 200}, 32);
  check_sharded<Rule>(kv, {0, 200}, 32);
  // Short shards (three pieces of 2 tokens each): the transitions stay far from zero, so every fold shows.
  check_sharded<Rule>({.B = 1, .T = 24, .H = 1, .HV = 2, .K = 16, .V = 8, .initial_state = true}, {0, 6, 12, 18, 24}, 2);
  check_sharded<Rule>({.B = 1, .T = 150, .H = 1, .HV = 2, .K = 8, .V = 8, .gates = gate_range::extreme}, {0, 100, 150}, 32);
}

TEST_CASE("context parallel: states belong to the first and last rank") {
  auto c = random_case<gated_delta, float>::make({.B = 1, .T = 64, .H = 1, .HV = 1, .K = 8, .V = 8, .initial_state = true});
  cp::loopback middle(1, 3);
  auto a = time_slice_args(c.args(), 0, 32);
  a.final_state = {};
  CHECK(expect_error([&] { context_parallel<gated_delta>(a, middle); }, {"initial_state", "rank 0"}));
  a = time_slice_args(c.args(), 0, 32);
  a.initial_state = {};
  CHECK(expect_error([&] { context_parallel<gated_delta>(a, middle); }, {"final_state", "last rank"}));
  CHECK(cp::bytes_per_rank<gated_delta, float>(problem{.B = 1, .T = 64, .H = 1, .HV = 16, .K = 128, .V = 128, .N = 1}) ==
        16u * 128 * (128 + 128) * 4);
  CHECK(cp::bytes_per_rank<simple_gla, float>(problem{.B = 1, .T = 64, .H = 1, .HV = 16, .K = 128, .V = 128, .N = 1}) ==
        16u * 128 * (128 + 1) * 4);
}

// Ranks as threads, each calling with its own arguments; returns each rank's error message ("" where it returned).
// A rank that refused its arguments used to leave the others waiting forever in the first exchange (this test hung);
// shards of different sizes exchanged summaries of different sizes (reads past the smaller ones, silent garbage).
template <class MakeArgs>
std::vector<std::string> run_ranks(int ranks, MakeArgs&& args_of) {
  cp::local_group group(ranks);
  std::vector<std::string> messages(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] { messages[r] = message_of([&] { context_parallel<gated_delta>(args_of(r), group.rank(r)); }); });
  for (auto& t : threads) t.join();
  return messages;
}

TEST_CASE("context parallel: one rank's refusal or shards of different sizes stop every rank") {
  auto c = sentinel_case<gated_delta>({.B = 1, .T = 64, .H = 1, .HV = 2, .K = 8, .V = 8, .initial_state = true});
  auto wide = sentinel_case<gated_delta>({.B = 1, .T = 64, .H = 1, .HV = 4, .K = 8, .V = 8});
  SUBCASE("rank 1 of 2 gives an initial state") {
    const auto m = run_ranks(2, [&](int r) {
      auto a = shard(c.args(), 32 * r, 32 * (r + 1), r, 2);
      if (r == 1) a.initial_state = c.args().initial_state;
      return a;
    });
    CHECK(m[1].find("'initial_state' is read on rank 0 only; rank 1 gave one") != std::string::npos);
    CHECK(m[0].find("rank 1 refused its arguments") != std::string::npos);
  }
  SUBCASE("rank 0 of 3 has a bad chunk size") {
    const auto m = run_ranks(3, [&](int r) {
      auto a = shard(c.args(), 20 * r, 20 * r + 20, r, 3);
      if (r == 0) a.chunk_size = 48;
      return a;
    });
    CHECK(m[0].find("'chunk_size' = 48") != std::string::npos);
    CHECK(m[1].find("rank 0 refused") != std::string::npos);
    CHECK(m[2].find("rank 0 refused") != std::string::npos);
  }
  SUBCASE("threads = -1 on rank 0 of 2 (refused by the host backends inside the passes, after the exchange began)") {
    const auto m = run_ranks(2, [&](int r) {
      auto a = shard(c.args(), 32 * r, 32 * (r + 1), r, 2);
      if (r == 0) a.threads = -1;
      return a;
    });
    CHECK(m[0].find("'threads' = -1") != std::string::npos);
    CHECK(m[1].find("rank 0 refused") != std::string::npos);
  }
  SUBCASE("HV = 2 on rank 0, HV = 4 on rank 1") {
    const auto m = run_ranks(2, [&](int r) { return r == 0 ? shard(c.args(), 0, 32, 0, 2) : shard(wide.args(), 32, 64, 1, 2); });
    for (const std::string& e : m) {
      CHECK(e.find("shards disagree") != std::string::npos);
      CHECK(e.find("rank 1 has N = 1, HV = 4, K = 8, V = 8") != std::string::npos);
    }
  }
  // nothing written on any rank
  CHECK(untouched(c.o));
  CHECK(untouched(c.ht));
  CHECK(untouched(wide.o));
}
