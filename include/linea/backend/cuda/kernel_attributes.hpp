// linea/backend/cuda/kernel_attributes.hpp — what a kernel needs or gets on a device, set or asked once per
// (kernel, device) — two GPUs in one process each get their own — and cached: the calls are not free, the check
// before them is one atomic load.
//
// allow_dynamic_shared: cudaFuncSetAttribute(MaxDynamicSharedMemorySize) applies to the current device only; set
// again when a call needs more than was set (the CCQ query kernel's size depends on K). Always set, whatever the
// size: the 48 KB default bounds static + dynamic shared memory together.
// resident_blocks: how many blocks of the kernel the device runs at once.
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

// The same on the current device, for a size fixed at compile time.
template <auto Kernel, std::size_t Bytes>
void allow_dynamic_shared() {
  int device = 0;
  LINEA_CUDA_CHECK(cudaGetDevice(&device));
  allow_dynamic_shared<Kernel>(Bytes, device);
}

template <auto Kernel, int Threads>
int resident_blocks(int device) {
  constexpr int remembered_devices = 64;
  static std::atomic<int> known[remembered_devices] = {};
  const bool remembered = device >= 0 && device < remembered_devices;
  if (remembered) {
    if (const int n = known[device].load(std::memory_order_relaxed)) return n;
  }
  int per_sm = 0, sms = 0;
  LINEA_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, Threads, 0));
  LINEA_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int n = per_sm * sms > 0 ? per_sm * sms : 1;
  if (remembered) known[device].store(n, std::memory_order_relaxed);
  return n;
}

}  // namespace linea::cuda_detail
