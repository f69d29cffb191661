// linea/backend/cpu/threads.hpp — independent work items over a persistent pool of threads, no synchronisation
// inside an item.
//
// The CPU forms split work by (sequence, value head): each item runs its whole sequence alone, so threads
// meet only at the end of the call. Items are handed out by an atomic counter (sequences may differ in length).
//
// The threads are made once per process, on first use, and grow to the largest `threads` a call asks for; no
// call spawns a thread after that (a decode step runs every token, so thread creation would cost more than the
// step). The pool runs one call at a time: calls from several user threads take turns (each gets all the
// threads it asked for), and a call made from inside a running item (a form called by a form) runs on its own
// thread without the pool. The first exception an item throws stops the handing out of items and is rethrown
// to the caller once every thread has returned. After fork() the child starts a fresh pool on first use.
#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <vector>

#if __has_include(<pthread.h>)
#include <pthread.h>
#endif

#include "../../config.hpp"
#include "../../core/arguments.hpp"
#include "../../core/error.hpp"
#include "../isa.hpp"

namespace linea::cpu_backend::inline LINEA_ISA {

// The thread count a call uses: arguments::threads, 0 = the hardware's concurrency, never more than items.
inline int thread_count(int requested, index_t items) {
  if (requested < 0)
    throw error("argument 'threads' = " + std::to_string(requested) + " must be >= 0 (0: one per hardware thread)");
  int n = requested == 0 ? static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) : requested;
  return static_cast<int>(std::max<index_t>(1, std::min<index_t>(n, items)));
}

// How deep the current thread is inside pool work (0: a user's thread outside any call).
inline thread_local int pool_depth = 0;

class thread_pool {
 public:
  // The process's pool (one per instruction set: backend/isa.hpp), made on first use. It is never destroyed:
  // its threads wait until the process exits, so no call can outlive it during static destruction.
  static thread_pool& instance() {
    static const bool fork_handler = [] {
#if __has_include(<pthread.h>)
      pthread_atfork(nullptr, nullptr, [] { current() = nullptr; });  // the child has none of these threads
#endif
      return true;
    }();
    (void)fork_handler;
    std::lock_guard<std::mutex> lock(creation());
    if (!current()) current() = new thread_pool;
    return *current();
  }

  // Calls job(worker) for every worker in [0, workers): worker 0 on the calling thread, the others on pool
  // threads; returns when all have returned. job must not throw (parallel_items catches inside it).
  template <class Job>
  void run(int workers, Job& job) {
    std::lock_guard<std::mutex> call(call_);  // one call at a time
    grow(workers - 1);
    {
      std::lock_guard<std::mutex> lock(m_);
      job_ = &job;
      call_job_ = [](void* j, int id) { (*static_cast<Job*>(j))(id); };
      helpers_ = workers - 1;
      pending_ = workers - 1;
      ++generation_;
    }
    wake_.notify_all();
    ++pool_depth;
    job(0);
    --pool_depth;
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
  }

  int threads() const {
    std::lock_guard<std::mutex> lock(m_);
    return static_cast<int>(threads_.size());
  }

 private:
  thread_pool() = default;
  static thread_pool*& current() {
    static thread_pool* pool = nullptr;
    return pool;
  }
  static std::mutex& creation() {
    static std::mutex m;
    return m;
  }

  // At least n pool threads (worker ids 1..n). Where the system starts no more (a `threads` of millions, a process
  // limit), a linea::error naming the argument, before the call's work begins; the threads made so far stay.
  void grow(int n) {
    std::lock_guard<std::mutex> lock(m_);
    while (static_cast<int>(threads_.size()) < n) {
      const int id = static_cast<int>(threads_.size()) + 1;
      try {
        threads_.emplace_back([this, id, seen = generation_] { loop(id, seen); });
      } catch (const std::system_error& e) {
        throw error("argument 'threads': the CPU backend could not start thread " + std::to_string(id + 1) + " of the " +
                    std::to_string(n + 1) + " this call would use (" + e.what() + "); ask for fewer");
      }
    }
  }

  void loop(int id, std::uint64_t seen) {
    pool_depth = 1;
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (id > helpers_) continue;  // this call needs fewer threads
      void* job = job_;
      void (*call_job)(void*, int) = call_job_;
      lock.unlock();
      call_job(job, id);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex call_;
  mutable std::mutex m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;  // never joined: see instance()
  void* job_ = nullptr;  // the current call's job and how to call it (no allocation per call)
  void (*call_job_)(void*, int) = nullptr;
  int helpers_ = 0, pending_ = 0;
  std::uint64_t generation_ = 0;
};

// Calls body(worker, item) for every item in [0, items) on `threads` threads (the caller is worker 0).
// make_worker(worker) builds each thread's workspace for this call; body receives it. Exceptions are rethrown.
template <class MakeWorker, class Body>
void parallel_items(index_t items, int threads, MakeWorker make_worker, Body body) {
  std::atomic<index_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto run = [&](int id) {
    try {
      auto&& ws = make_worker(id);
      for (index_t item = next++; item < items; item = next++) body(ws, item);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = items;  // stop handing out work
    }
  };
  if (threads <= 1 || pool_depth > 0) {  // alone, or inside a pool item: on this thread
    ++pool_depth;
    run(0);
    --pool_depth;
  } else {
    thread_pool::instance().run(threads, run);
  }
  if (failure) std::rethrow_exception(failure);
}

// Workspaces kept between calls: per worker slot, the last workspace of type W and the key it was built for
// (a form's key is its problem sizes and options that size the buffers). A call with the same key reuses it
// (a decode step at a fixed batch allocates nothing); another key rebuilds it. Slots are only touched inside
// thread_pool::run (one call at a time, each worker its own slot) or by a call running alone on its thread.
template <class W, class Key>
class workspace_cache {
 public:
  // Slot `worker`'s workspace for `key`, built by make() when the slot holds none or another key's.
  template <class Make>
  static W& get(int worker, const Key& key, Make make) {
    auto& s = slots();
    auto& slot = s[static_cast<std::size_t>(worker)];
    if (!slot.ws || !(slot.key == key)) {
      slot.ws.reset();
      slot.ws.emplace(make());
      slot.key = key;
    }
    return *slot.ws;
  }
  static void reserve(int workers) {
    auto& s = slots();
    if (static_cast<int>(s.size()) < workers) s.resize(static_cast<std::size_t>(workers));
  }

 private:
  struct slot {
    Key key{};
    std::optional<W> ws;
  };
  static std::vector<slot>& slots() {
    static std::vector<slot> s;
    return s;
  }
};

// The part of a problem that a kernel keeps from its construction (buffer sizes, the scale): a kernel kept from
// an earlier call is reused for any call with the same key. So kernels must not keep B, T or N (batch rows,
// tokens, sequences), which change between calls that share them (tests/backend/cpu/threads_test.cpp checks).
inline auto problem_key(const problem& p) { return std::tuple(p.H, p.HV, p.K, p.V, p.group, p.scale); }

// parallel_items whose workspaces (of type W, built by make_worker()) are kept for the next call with the same
// key. A call inside a pool item (nested) builds its own, since the slots are in use.
template <class W, class Key, class MakeWorker, class Body>
void parallel_items_reusing(index_t items, int threads, const Key& key, MakeWorker make_worker, Body body) {
  if (pool_depth > 0) {
    parallel_items(items, threads, [&](int) { return make_worker(); }, body);
    return;
  }
  // The slots are resized before any worker starts; threads > 1 calls are serialised by the pool's lock,
  // and a call with threads == 1 by this one (two user threads may call at once).
  static std::mutex serial;
  std::lock_guard<std::mutex> lock(serial);
  workspace_cache<W, Key>::reserve(threads);
  parallel_items(items, threads, [&](int id) -> W& { return workspace_cache<W, Key>::get(id, key, make_worker); },
                 body);
}

}  // namespace linea::cpu_backend::inline LINEA_ISA
