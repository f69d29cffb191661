// linea/backend/cuda/check.hpp — every CUDA call and launch is checked; a failure becomes a linea::error
// carrying CUDA's own message and the call that failed.
#pragma once
#if !defined(__CUDACC__)
#error "linea/backend/cuda/*.hpp is CUDA code: include <linea/cuda.hpp> from a translation unit compiled by nvcc"
#endif
#include <cuda_runtime.h>

#include <string>

#include "../../core/error.hpp"

namespace linea::cuda_detail {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // a non-sticky error must not resurface at the next, unrelated check
    throw error(std::string("CUDA: ") + what + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  }
}

// After a launch: the launch itself (bad configuration, too much shared memory) is reported at once.
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

}  // namespace linea::cuda_detail

#define LINEA_CUDA_CHECK(call) ::linea::cuda_detail::check((call), #call)

namespace linea::cuda_detail {

// The current device (per host thread: cudaSetDevice): where a call's launches go.
inline int current_device() {
  int device = 0;
  LINEA_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

}  // namespace linea::cuda_detail
