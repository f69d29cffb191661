// linea/backend/cuda/workspace.hpp — the device scratch of a call: what it holds, how many bytes
// (linea::cuda::workspace_size), and the workspace linea keeps when the caller gives none.
//
//   const std::size_t n = linea::cuda::workspace_size<linea::gated_delta, linea::read::ccq<>>(args, l);
//   l.workspace = my_allocator(n), l.workspace_bytes = n;       // or leave it null: cached per (device, stream)
//
// The scratch holds the device copies of host cu_seqlens / state_indices, the CCQ read's two [B, T, HV, K]
// float32 tensors and the index check's error word; a call needing none of them (identity read, indices on the
// device or absent) uses no workspace at all — unless the chunkwise form cuts its long sequences into pieces,
// whose states and transitions are carved from the workspace instead (segments.hpp).
#pragma once
#include "alignment.hpp"
#include "check.hpp"
#include "launch_options.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "../../core/arguments.hpp"
#include "../../core/gradients.hpp"
#include "../../core/error.hpp"

namespace linea::cuda_detail {

// Byte offsets of the parts of a call's workspace (npos: not used); `bytes` is the total.
struct workspace_layout {
  static constexpr std::size_t npos = ~std::size_t(0);
  std::size_t error_word = npos, cu_seqlens = npos, state_indices = npos, ccq_y = npos, ccq_q = npos;
  std::size_t bytes = 0;
};

template <class Read, class T, class S>
workspace_layout plan_workspace(const arguments<T, S>& a, const cuda::launch& l) {
  workspace_layout w;
  auto take = [&](std::size_t n) {
    const std::size_t at = w.bytes;
    w.bytes += part_align(n);  // every part part_bytes aligned past the (16-byte aligned) base
    return at;
  };
  if (l.check_indices && (!l.cu_seqlens.empty() || !l.state_indices.empty())) w.error_word = take(sizeof(int));
  if (!a.cu_seqlens.empty()) w.cu_seqlens = take(a.cu_seqlens.size() * sizeof(std::int64_t));
  if (!a.state_indices.empty()) w.state_indices = take(a.state_indices.size() * sizeof(std::int32_t));
  if constexpr (!Read::is_identity) {
    // Y_t and q̃_t [B, T, HV, K] (the shapes validate() checks; before validation, those of q and v).
    const auto n = static_cast<std::size_t>(a.q.extent(0) * a.q.extent(1) * a.v.extent(2) * a.q.extent(3));
    w.ccq_y = take(n * sizeof(float));
    w.ccq_q = take(n * sizeof(float));
  }
  return w;
}

// The workspaces linea keeps for callers that give none: one per (device, stream) — two streams must not share
// scratch, their work may overlap — grown when a call needs more and kept until release_workspaces(). A call
// holds its entry's lock while it enqueues, so two host threads on one stream do not interleave their copies.
// (With a per-thread default stream, each host thread's default stream is its own entry.)
class workspace_cache {
 public:
  static workspace_cache& instance() {
    static auto* cache = new workspace_cache;  // never destroyed: at exit the CUDA runtime may already be gone
    return *cache;
  }

  struct lease {
    std::unique_lock<std::mutex> lock;
    void* ptr = nullptr;
  };

  // `busy`: null — wait while another call holds the entry; else throw linea::error(busy) at once. A call that
  // itself waits for other host threads while it holds the entry (context parallelism: ranks as threads on one
  // stream) would otherwise wait forever.
  lease get(int device, cudaStream_t stream, std::size_t bytes, const char* busy = nullptr) {
    entry& e = find(device, stream);
    lease l{std::unique_lock<std::mutex>(e.mutex, std::defer_lock), nullptr};
    if (!busy) l.lock.lock();
    else if (!l.lock.try_lock()) throw error(busy);
    if (e.bytes < bytes) {
      // cudaFree waits for the device, so no queued work still uses the old buffer. Grows geometrically so a
      // caller with slowly increasing shapes does not reallocate every call.
      if (e.ptr) LINEA_CUDA_CHECK(cudaFree(e.ptr));
      e.ptr = nullptr, e.bytes = 0;
      const std::size_t n = std::max(bytes, 2 * e.previous);
      LINEA_CUDA_CHECK(cudaMalloc(&e.ptr, n));
      e.bytes = e.previous = n;
    }
    l.ptr = e.ptr;
    return l;
  }

  void release() {
    std::lock_guard<std::mutex> g(mutex_);
    for (entry& e : entries_) {
      std::lock_guard<std::mutex> held(e.mutex);
      if (e.ptr) {
        int current = 0;
        LINEA_CUDA_CHECK(cudaGetDevice(&current));
        LINEA_CUDA_CHECK(cudaSetDevice(e.device));
        const cudaError_t freed = cudaFree(e.ptr);
        LINEA_CUDA_CHECK(cudaSetDevice(current));
        LINEA_CUDA_CHECK(freed);
      }
      e.ptr = nullptr, e.bytes = 0;
    }
  }

 private:
  struct entry {
    int device = 0;
    cudaStream_t stream = nullptr;
    std::thread::id thread;  // per-thread default streams only
    std::mutex mutex;
    void* ptr = nullptr;
    std::size_t bytes = 0, previous = 0;
  };

  static bool per_thread(cudaStream_t s) {
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
    if (s == nullptr) return true;
#endif
    return s == cudaStreamPerThread;
  }

  entry& find(int device, cudaStream_t stream) {
    const std::thread::id thread = per_thread(stream) ? std::this_thread::get_id() : std::thread::id{};
    std::lock_guard<std::mutex> g(mutex_);
    for (entry& e : entries_)
      if (e.device == device && e.stream == stream && e.thread == thread) return e;
    entry& e = entries_.emplace_back();  // a deque: entries never move
    e.device = device, e.stream = stream, e.thread = thread;
    return e;
  }

  std::mutex mutex_;
  std::deque<entry> entries_;
};

// The workspace of one call: the caller's (checked against the layout) or the cached one of (device, stream). (The
// forward's, the segmented forward's and the backward's: backward.hpp passes its size.)
struct call_workspace {
  workspace_cache::lease cached;
  unsigned char* base = nullptr;

  // `query`: the function that tells the caller the size, named in the error; `busy`: workspace_cache::get's
  call_workspace(const workspace_layout& w, const cuda::launch& l, int device,
                 const char* query = "linea::cuda::workspace_size", const char* busy = nullptr)
      : call_workspace(w.bytes, l, device, query, busy) {}
  call_workspace(std::size_t bytes, const cuda::launch& l, int device, const char* query, const char* busy = nullptr) {
    if (bytes == 0) return;
    if (l.workspace) {
      if (l.workspace_bytes < bytes)
        throw error("argument 'workspace' of cuda::launch has " + std::to_string(l.workspace_bytes) +
                    " bytes; this call needs " + std::to_string(bytes) + " (" + query + ")");
      if (reinterpret_cast<std::uintptr_t>(l.workspace) % 16 != 0)
        throw error("argument 'workspace' of cuda::launch must be 16-byte aligned");
      base = static_cast<unsigned char*>(l.workspace);
      return;
    }
    cached = workspace_cache::instance().get(device, l.stream, bytes, busy);
    base = static_cast<unsigned char*>(cached.ptr);
  }
  template <class X>
  X* at(std::size_t offset) const {
    return offset == workspace_layout::npos ? nullptr : reinterpret_cast<X*>(base + offset);
  }
};

// The caller's workspace (l.workspace, the `bytes` this call uses of it) shares memory with no argument of the call
// (core/gradients.hpp's expect_scratch_apart: the forward's inputs and outputs, and with g the backward's) and with
// neither of the launch's device index arrays — checked on the host before anything is launched. linea's own cached
// workspace needs no check.
template <class T, class S>
void expect_workspace_apart(const cuda::launch& l, std::size_t bytes, const arguments<T, S>& a,
                            const gradients<T, S>* g = nullptr) {
  if (l.workspace == nullptr || bytes == 0) return;
  constexpr const char* name = "'workspace' of cuda::launch";
  linea::detail::expect_scratch_apart(l.workspace, bytes, name, a, g);
  const auto lo = reinterpret_cast<std::uintptr_t>(l.workspace);
  const linea::detail::byte_range scratch{lo, lo + bytes};
  const auto array = [](const void* p, std::size_t n) {
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    return p ? linea::detail::byte_range{at, at + n} : linea::detail::byte_range{};
  };
  const std::pair<linea::detail::byte_range, const char*> arrays[] = {
      {array(l.cu_seqlens.data, l.cu_seqlens.size * (l.cu_seqlens.wide ? 8 : 4)), "cu_seqlens"},
      {array(l.state_indices.data, l.state_indices.size * sizeof(std::int32_t)), "state_indices"}};
  for (const auto& [range, what] : arrays)
    if (scratch.overlaps(range))
      throw error(std::string("argument 'workspace' of cuda::launch overlaps cuda::launch::") + what +
                  "; the call's scratch is overwritten while it runs and may share memory with no argument");
}

}  // namespace linea::cuda_detail

namespace linea::cuda {

// linea::cuda::workspace_size<Rule, Read>(args, launch), the bytes a call needs, is in segments.hpp: it adds the
// chunkwise form's segmentation scratch to the layout above.

// Frees the workspaces linea keeps (waits for the device); the next call that needs one allocates it again.
inline void release_workspaces() { cuda_detail::workspace_cache::instance().release(); }

}  // namespace linea::cuda
