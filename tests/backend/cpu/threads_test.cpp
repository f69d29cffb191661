// The CPU backend's persistent thread pool and kept workspaces (backend/cpu/threads.hpp): repeated calls give
// identical results and spawn no thread, kernels kept from a call with other B, T, N still match the reference,
// two user threads may call at once, a call from inside an item runs inline, and exceptions reach the caller.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

using rule = gated_delta;

template <class Case>
auto reference_of(const Case& c) {
  auto ref = c.template cast<double>();
  reference::recurrent<rule>(ref.args());
  return ref;
}

// Runs the form `chunked` (chunkwise) or not (recurrent) on c with `threads` threads.
template <class Case>
void run_form(Case& c, bool chunked, int threads) {
  auto a = c.args();
  a.threads = threads;
  if (chunked) chunkwise<rule>(a);
  else recurrent<rule>(a);
}

bool same_bits(const tensor<float, 4>& x, const tensor<float, 4>& y) {
  return x.size() == y.size() && std::equal(x.values().begin(), x.values().end(), y.values().begin());
}

}  // namespace

TEST_CASE("cpu threads: 40 calls in a loop give bit-identical results and spawn no thread after the first") {
  auto c = random_case<rule, float>::make({.B = 3, .T = 70, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = true});
  const auto ref = reference_of(c);
  for (bool chunked : {false, true}) {
    CAPTURE(chunked);
    run_form(c, chunked, 4);
    const tensor<float, 4> o0 = c.o, s0 = c.ht;
    CHECK(relative_error(o0, ref.o) <= tolerance_for<float>());
    CHECK(relative_error(s0, ref.ht) <= tolerance_for<float>());
    const int pool_threads = cpu_backend::thread_pool::instance().threads();
    CHECK(pool_threads >= 3);  // grew to a.threads (the caller is the fourth)
    bool identical = true;
    for (int i = 0; i < 40; ++i) {
      std::fill(c.o.values().begin(), c.o.values().end(), 7.0f);
      run_form(c, chunked, 4);
      identical = identical && same_bits(c.o, o0) && same_bits(c.ht, s0);
    }
    CHECK(identical);
    CHECK(cpu_backend::thread_pool::instance().threads() == pool_threads);
  }
}

TEST_CASE("cpu threads: the pool grows to the largest a.threads asked for") {
  auto c = random_case<rule, float>::make({.B = 8, .T = 20, .H = 1, .HV = 1, .K = 16, .V = 16});
  run_form(c, false, 2);
  const int before = cpu_backend::thread_pool::instance().threads();
  run_form(c, false, 7);  // 8 items: 7 threads
  CHECK(cpu_backend::thread_pool::instance().threads() >= std::max(before, 6));
  CHECK(relative_error(c.o, reference_of(c).o) <= tolerance_for<float>());
}

TEST_CASE("cpu threads: kernels kept from a call of other B, T and N match the reference") {
  // Same heads and sizes (so the same kept kernels), different batch, length and packed sequences.
  for (bool chunked : {false, true}) {
    CAPTURE(chunked);
    for (const case_shape& s : {case_shape{.B = 2, .T = 130, .H = 2, .HV = 4, .K = 32, .V = 16, .seed = 1},
                                case_shape{.B = 5, .T = 37, .H = 2, .HV = 4, .K = 32, .V = 16, .initial_state = true, .seed = 2},
                                case_shape{.H = 2, .HV = 4, .K = 32, .V = 16, .seqlens = {3, 90, 1, 40}, .seed = 3},
                                case_shape{.B = 1, .T = 1, .H = 2, .HV = 4, .K = 32, .V = 16, .seed = 4}}) {
      CAPTURE(describe_shape(s));
      auto c = random_case<rule, float>::make(s);
      run_form(c, chunked, 3);
      const auto ref = reference_of(c);
      CHECK(relative_error(c.o, ref.o) <= tolerance_for<float>());
      CHECK(relative_error(c.ht, ref.ht) <= tolerance_for<float>());
    }
  }
}

TEST_CASE("cpu threads: two user threads calling at once both get the single-call results") {
  auto c1 = random_case<rule, float>::make({.B = 4, .T = 50, .H = 2, .HV = 4, .K = 32, .V = 16, .seed = 5});
  auto c2 = random_case<rule, float>::make({.B = 3, .T = 66, .H = 2, .HV = 2, .K = 16, .V = 32, .seed = 6});
  run_form(c1, true, 1);
  run_form(c2, false, 1);
  const tensor<float, 4> want1 = c1.o, want2 = c2.o;
  std::atomic<int> mismatches{0};
  auto worker = [&](auto c, bool chunked, const tensor<float, 4>& want) {
    for (int i = 0; i < 25; ++i) {
      std::fill(c.o.values().begin(), c.o.values().end(), 7.0f);
      run_form(c, chunked, 3);
      if (relative_error(c.o, want) > tolerance_for<float>()) ++mismatches;  // thread count may change summation
    }
  };
  std::thread t1(worker, c1, true, std::cref(want1));
  std::thread t2(worker, c2, false, std::cref(want2));
  t1.join();
  t2.join();
  CHECK(mismatches == 0);
}

TEST_CASE("cpu threads: an exception thrown by an item reaches the caller, and the pool still works after it") {
  // From a pool thread: worker 0 (the caller) waits until another worker has thrown, so the exception is
  // certainly a pool thread's.
  std::atomic<bool> thrown{false};
  auto body = [&](int& worker, index_t) {
    if (worker != 0) {
      thrown = true;
      throw std::runtime_error("from a pool thread");
    }
    for (int spin = 0; !thrown && spin < 100000; ++spin) std::this_thread::sleep_for(std::chrono::microseconds(100));
  };
  CHECK_THROWS_WITH(cpu_backend::parallel_items(1000, 4, [](int id) { return id; }, body), "from a pool thread");
  // A failure stops the handing out of items (one thread: exactly the items up to the failing one ran).
  int ran = 0;
  CHECK_THROWS_WITH(cpu_backend::parallel_items(1000, 1, [](int) { return 0; },
                                                [&](int&, index_t item) {
                                                  ++ran;
                                                  if (item == 17) throw std::runtime_error("item 17");
                                                }),
                    "item 17");
  CHECK(ran == 18);
  // The same from a worker's workspace construction.
  CHECK_THROWS_AS(cpu_backend::parallel_items(
                      8, 4, [](int id) { return id == 2 ? throw linea::error("workspace 2") : id; }, [](int&, index_t) {}),
                  linea::error);
  std::atomic<index_t> sum{0};
  cpu_backend::parallel_items(100, 4, [](int) { return 0; }, [&](int&, index_t item) { sum += item; });
  CHECK(sum == 4950);
}

TEST_CASE("cpu threads: a parallel call from inside an item runs inline instead of waiting for the pool") {
  std::atomic<index_t> inner{0};
  cpu_backend::parallel_items(4, 4, [](int) { return 0; }, [&](int&, index_t) {
    cpu_backend::parallel_items(10, 4, [](int) { return 0; }, [&](int&, index_t) { ++inner; });
  });
  CHECK(inner == 40);
}
