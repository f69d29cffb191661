// linea/backend/cuda/index_check.hpp — cuda::launch::check_indices: the host spans' checks of cu_seqlens and
// state_indices, done on the device for index arrays that stay there. Each bad entry lowers one error word
// (atomicMin of 2·entry + what), which the host reads after waiting for the stream, and throws for.
//
// Without the check the kernels still stay inside the views (source.hpp, sequence_of): a state index outside
// [-1, N) skips its row; a sequence's bounds are clipped to [0, T]. Results of such calls are unspecified.
#pragma once
#include "check.hpp"
#include "launch_options.hpp"

#include <climits>
#include <string>

#include "../../core/error.hpp"
#include "../../core/numeric.hpp"

namespace linea::cuda_detail {

constexpr int index_check_threads = 256;
enum index_fault : int { out_of_range = 0, shared_state = 1 };

__device__ __forceinline__ void report_fault(int* word, index_t entry, index_fault f) {
  atomicMin(word, static_cast<int>(2 * entry + f));
}

// state_indices[b] ∈ [-1, N); with `unique`, no two rows name the same state (pairwise: B is a batch, not a pool).
// (Kernels in a header are templates: one definition however many TUs include it.)
template <class I>
__global__ void check_state_indices_kernel(const I* idx, index_t B, index_t N, bool unique, int* word) {
  const index_t b = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x;
  if (b >= B) return;
  const I x = idx[b];
  if (x < -1 || x >= N) return report_fault(word, b, out_of_range);
  if (!unique || x < 0) return;
  for (index_t c = 0; c < b; ++c)
    if (idx[c] == x) return report_fault(word, b, shared_state);
}

// cu_seqlens[0] = 0, non-decreasing, cu_seqlens[N] = T.
template <class I>
__global__ void check_cu_seqlens_kernel(const I* cu, index_t count, index_t T, int* word) {
  const index_t n = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x;
  if (n >= count) return;
  const index_t x = cu[n];
  const bool bad = (n == 0 && x != 0) || (n == count - 1 && x != T) || (n > 0 && x < cu[n - 1]);
  if (bad) report_fault(word, n, out_of_range);
}

// Runs the checks on `stream`, waits for it, throws on the first bad entry. `word` is workspace.
inline void check_device_indices(const cuda::launch& l, index_t B, index_t T, index_t N, bool writes_back, int* word,
                                 cudaStream_t stream) {
  LINEA_CUDA_CHECK(cudaMemsetAsync(word, 0x7F, sizeof(int), stream));  // 0x7F7F7F7F: no fault
  const auto blocks = [](std::size_t n) { return static_cast<unsigned>((n + index_check_threads - 1) / index_check_threads); };
  if (!l.state_indices.empty()) {
    check_state_indices_kernel<std::int32_t><<<blocks(l.state_indices.size), index_check_threads, 0, stream>>>(
        l.state_indices.data, B, N, writes_back, word);
    check_launch("check_state_indices_kernel");
  }
  if (!l.cu_seqlens.empty()) {
    const auto n = static_cast<index_t>(l.cu_seqlens.size);
    if (l.cu_seqlens.wide)
      check_cu_seqlens_kernel<<<blocks(l.cu_seqlens.size), index_check_threads, 0, stream>>>(
          static_cast<const std::int64_t*>(l.cu_seqlens.data), n, T, word);
    else
      check_cu_seqlens_kernel<<<blocks(l.cu_seqlens.size), index_check_threads, 0, stream>>>(
          static_cast<const std::int32_t*>(l.cu_seqlens.data), n, T, word);
    check_launch("check_cu_seqlens_kernel");
  }
  int fault = 0;
  LINEA_CUDA_CHECK(cudaMemcpyAsync(&fault, word, sizeof(int), cudaMemcpyDeviceToHost, stream));
  LINEA_CUDA_CHECK(cudaStreamSynchronize(stream));  // the one wait: the verdict must reach the host
  if (fault == 0x7F7F7F7F) return;
  const std::string entry = std::to_string(fault / 2);
  if (!l.state_indices.empty()) {
    if (fault % 2 == shared_state)
      throw error("argument 'state_indices[" + entry + "]' (on the device) names a state another batch row also "
                  "names while final_state (or CCQ statistics) is written; each state takes at most one token per step");
    throw error("argument 'state_indices[" + entry + "]' (on the device) is outside [-1, N) for a state pool of N = " +
                std::to_string(N) + " rows");
  }
  throw error("argument 'cu_seqlens[" + entry + "]' (on the device) breaks cu_seqlens[0] = 0, non-decreasing, "
              "cu_seqlens[N] = T = " + std::to_string(T));
}

}  // namespace linea::cuda_detail
