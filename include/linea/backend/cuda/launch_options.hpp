// linea/backend/cuda/launch_options.hpp — how one call of the CUDA backend runs: its stream, its scratch memory
// and the index arrays that stay on the device (CUTLASS style: arguments, workspace, stream).
//
//   linea::cuda::launch l{.stream = s, .state_indices = {slots_on_device, B}};
//   linea::step<linea::gated_delta, linea::read::identity, linea::backend::cuda>(args, l);
//
// Every kernel, memset and copy of the call goes on `stream`; nothing waits for the device unless
// `check_indices` asks for it. docs/usage.md ("The CUDA backend") has the contract.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace linea::cuda {

// An index array in device memory, read only by the kernels (the host never copies it back).
template <class I>
struct device_span {
  const I* data = nullptr;
  std::size_t size = 0;
  bool empty() const { return size == 0; }
};

// cu_seqlens on the device, int32 (PyTorch's usual) or int64.
struct device_seqlens {
  const void* data = nullptr;
  std::size_t size = 0;
  bool wide = true;  // int64 entries, else int32
  device_seqlens() = default;
  device_seqlens(const std::int64_t* p, std::size_t n) : data(p), size(n), wide(true) {}
  device_seqlens(const std::int32_t* p, std::size_t n) : data(p), size(n), wide(false) {}
  bool empty() const { return size == 0; }
};

struct launch {
  // The stream every launch, memset and copy of the call is ordered on (null: the default stream).
  cudaStream_t stream = nullptr;
  // Device scratch of workspace_bytes >= linea::cuda::workspace_size<Rule, Read>(args, this launch), 16-byte
  // aligned, used by this call only until it completes on `stream`. Null: a workspace that linea allocates once
  // and keeps per (device, stream) (backend/cuda/workspace.hpp).
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  // Index arrays in device memory, instead of arguments::cu_seqlens / arguments::state_indices (host spans, which
  // are copied into the workspace on every call). The host cannot check their values: see `check_indices`.
  device_seqlens cu_seqlens;                // [N+1], recurrent and chunkwise forms
  device_span<std::int32_t> state_indices;  // [B], decode step
  // Check the device-side index values on the device before anything is launched, wait for the stream and throw
  // linea::error on a bad entry (the host spans' checks, at the price of one stream synchronisation). Off: bad
  // device-side values are the caller's error, and the kernels stay inside the views (docs/usage.md).
  bool check_indices = false;
  // Intra-sequence parallelism of the chunkwise form (backend/cuda/segments.hpp): sequences longer than this many
  // tokens are cut into pieces run in parallel and combined exactly. −1: chosen from the shape and the SM count
  // (cut only when the call cannot fill the GPU); 0: never cut; > 0: this piece length.
  std::int64_t segment_tokens = -1;
};

}  // namespace linea::cuda
