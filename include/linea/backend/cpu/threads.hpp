// linea/backend/cpu/threads.hpp — independent work items over a few threads, no synchronisation inside an item.
//
// The CPU forms split work by (sequence, value head): each item runs its whole sequence alone, so threads
// meet only at the end of the call. Items are handed out by an atomic counter (sequences may differ in length).
#pragma once
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../../config.hpp"
#include "../../core/error.hpp"

namespace linea::cpu_backend {

// The thread count a call uses: arguments::threads, 0 = the hardware's concurrency, never more than items.
inline int thread_count(int requested, index_t items) {
  if (requested < 0)
    throw error("argument 'threads' = " + std::to_string(requested) + " must be >= 0 (0: one per hardware thread)");
  int n = requested == 0 ? static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) : requested;
  return static_cast<int>(std::max<index_t>(1, std::min<index_t>(n, items)));
}

// Calls body(worker, item) for every item in [0, items) on `threads` threads (the caller is worker 0).
// make_worker(worker) builds each thread's workspace once; body receives it. Exceptions are rethrown.
template <class MakeWorker, class Body>
void parallel_items(index_t items, int threads, MakeWorker make_worker, Body body) {
  std::atomic<index_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto run = [&](int id) {
    try {
      auto ws = make_worker(id);
      for (index_t item = next++; item < items; item = next++) body(ws, item);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = items;  // stop handing out work
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads > 1 ? threads - 1 : 0));
  for (int id = 1; id < threads; ++id) pool.emplace_back(run, id);
  run(0);
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace linea::cpu_backend
