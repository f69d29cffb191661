// python/src/cuda_entry.hpp — the extension's CUDA part as plain C++: the forward and the backward of one rule on
// device views, compiled by nvcc in python/src/cuda/rules.cu (no nanobind there) and called by dispatch.hpp.
// Built only where nvcc is (LINEA_PYTHON_HAS_CUDA); elsewhere a CUDA tensor is a clear error.
#pragma once
#include <cstddef>
#include <cstdint>

#include <linea/core/arguments.hpp>
#include <linea/core/gradients.hpp>

namespace linea::python::gpu {

#if defined(LINEA_PYTHON_HAS_CUDA)
inline constexpr bool compiled = true;
#else
inline constexpr bool compiled = false;
#endif

enum class form_id { recurrent, chunkwise, step };
enum class read_id { identity, ccq_uniform, ccq_decayed };

// Where one call runs (q's CUDA device, the caller's stream) and its index arrays when they are in device memory
// (fla's usual cu_seqlens / ssm_state_indices: CUDA tensors, read by the kernels without a copy to the host).
struct launch_info {
  int device = 0;
  std::uintptr_t stream = 0;  // cudaStream_t
  const void* cu_seqlens = nullptr;
  std::size_t cu_seqlens_size = 0;
  bool cu_seqlens_wide = true;  // int64, else int32
  const std::int32_t* state_indices = nullptr;
  std::size_t state_indices_size = 0;
};

// T: float, bf16 or fp16 (the CCQ reads: float or bf16). Throws linea::error on bad arguments.
template <class Rule, class T>
void forward(const arguments<T>& a, form_id form, read_id read, const launch_info& l);

// Whether rule × read has a CUDA backward (backend/cuda/backward.hpp); the backward below throws where not.
template <class Rule>
bool has_backward(read_id read);

// The backward in float32 (the Python layer widens 16-bit inputs and rounds the gradients back).
template <class Rule>
void backward(const arguments<float>& a, const gradients<float>& g, read_id read, const launch_info& l);

}  // namespace linea::python::gpu
