// linea/backend/cuda/kernel_attributes.hpp — a kernel's dynamic shared memory, set per (kernel, device); the
// current device and its SM count, cached per device.
//
// cudaFuncSetAttribute(MaxDynamicSharedMemorySize) applies to the current device only, so it is set once per
// (kernel, device) — two GPUs in one process each get it — and again when a call needs more than was set (the CCQ
// query kernel's size depends on K); the call is not free, the check before it is one atomic load. Always set,
// whatever the size: the 48 KB default bounds static and dynamic shared memory together.
#pragma once
#include "check.hpp"

#include <atomic>
#include <cstddef>
#include <mutex>

namespace linea::cuda_detail {

template <auto Kernel>
void allow_dynamic_shared(std::size_t bytes, int device) {
  constexpr int remembered_devices = 64;  // beyond: set on every call (correct, slower)
  static std::atomic<std::size_t> allowed[remembered_devices] = {};
  static std::mutex setting;
  const bool remembered = device >= 0 && device < remembered_devices;
  if (remembered && allowed[device].load(std::memory_order_acquire) >= bytes) return;
  std::lock_guard<std::mutex> g(setting);
  if (remembered && allowed[device].load(std::memory_order_relaxed) >= bytes) return;
  LINEA_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  if (remembered) allowed[device].store(bytes, std::memory_order_release);
}

// The largest shared-memory carveout for Kernel on the current device, set once per (kernel, device): a hint the
// driver may otherwise resolve to a smaller carveout than the kernel's CTAs an SM need (chunk_grad16_kernel: two
// of ~111 KB).
template <auto Kernel>
void prefer_max_shared_carveout() {
  constexpr int remembered_devices = 64;
  static std::atomic<bool> set[remembered_devices] = {};
  int device = 0;
  LINEA_CUDA_CHECK(cudaGetDevice(&device));
  const bool remembered = device >= 0 && device < remembered_devices;
  if (remembered && set[device].load(std::memory_order_acquire)) return;
  LINEA_CUDA_CHECK(
      cudaFuncSetAttribute(Kernel, cudaFuncAttributePreferredSharedMemoryCarveout, int(cudaSharedmemCarveoutMaxShared)));
  if (remembered) set[device].store(true, std::memory_order_release);
}

// A device's SM count, read once per device (the attribute query is not free on a per-call path); devices past
// the remembered ones are asked every call.
inline int multiprocessor_count(int device) {
  constexpr int remembered_devices = 64;
  static std::atomic<int> counts[remembered_devices] = {};
  const bool remembered = device >= 0 && device < remembered_devices;
  if (remembered) {
    if (const int n = counts[device].load(std::memory_order_acquire)) return n;
  }
  int n = 0;
  LINEA_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
  if (remembered) counts[device].store(n, std::memory_order_release);
  return n;
}

// The same on the current device, for a size fixed at compile time.
template <auto Kernel, std::size_t Bytes>
void allow_dynamic_shared() {
  int device = 0;
  LINEA_CUDA_CHECK(cudaGetDevice(&device));
  allow_dynamic_shared<Kernel>(Bytes, device);
}

}  // namespace linea::cuda_detail
