// linea/backend/cuda/backward_phase_instances.hpp — the backward's phase launchers (backward/phases.hpp), compiled once
// for linea's own CUDA binaries instead of once per rule.
//
// The kernels of phases 1–4 are templated on the rule's shape only (erases, decays, per-key, channel gates, input
// type), not on the rule: chunk_grad_kernel<false, true, float>, the staged state passes and chunk_prep_kernel<false>
// run the CCQ read's statistics pass of every rule, the erasing kernels serve delta and gated_delta, the per-key ones
// kda and gdn2. Without this file every rule's unit in linea_cuda_instances (and tests/backend/cuda/backward_test.cu)
// compiled them again. nvcc skips a kernel's device code only where the host function template that launches it is
// declared `extern` (instances.hpp's note: a namespace-scope function template; the __global__ templates themselves
// would need -static-global-template-stub=false), so the unit of declaration is the launcher: prep_phase,
// state_phases, grad_phase, float32 and bf16 inputs (fp16 is instantiated where it is called).
//
// Defined in tests/backend/cuda/instances/backward_phases*.cu; declared extern wherever
// LINEA_CUDA_EXTERN_BACKWARD_PHASES is defined (cmake/linea_cuda.cmake sets it on linea_cuda_instances and on every
// binary that links it), except in A/B builds that change the kernels' precision or product count
// (the LINEA_BWD_* macros below: bench/cuda/grad_ab.cu's builds), which compile their own.
// A launcher's signature changing in phases.hpp means changing its line here.
#pragma once
#include "backward/phases.hpp"

#define LINEA_CUDA_BWD_PREP(prefix, E, PK, C, In)                                                                 \
  prefix template void linea::cuda_detail::bwd::prep_phase<E, PK, C, linea::cuda_detail::bwd::precision::tf32x3, \
                                                           In>(const linea::cuda_detail::bwd::work&, cudaStream_t, \
                                                               const linea::cuda_detail::bwd::channel_gates&);
#define LINEA_CUDA_BWD_STATES(prefix, E, PK, In)                                                                   \
  prefix template void linea::cuda_detail::bwd::state_phases<E, PK, linea::cuda_detail::bwd::precision::tf32x3, In>( \
      const linea::cuda_detail::bwd::work&, const linea::view<const float, 4>&, const linea::view<const float, 4>&, \
      const linea::view<float, 4>&, bool, bool, cudaStream_t);
#define LINEA_CUDA_BWD_GRAD(prefix, E, D, PK, T, C)                                                                \
  prefix template void linea::cuda_detail::bwd::grad_phase<E, D, PK, T, C,                                         \
                                                           linea::cuda_detail::bwd::precision::tf32x3>(           \
      const linea::cuda_detail::bwd::work&, const linea::view<T, 4>&, cudaStream_t,                                \
      const linea::cuda_detail::bwd::channel_gates&, const linea::cuda_detail::bwd::channel_grads<T>&,            \
      const linea::cuda_detail::bwd::direct_grads<T>&);

// Scalar and no decay (additive, simple_gla, delta, gated_delta, and every rule's CCQ statistics pass).
#define LINEA_CUDA_BWD_CHUNK_TYPE(prefix, T)                                                                       \
  LINEA_CUDA_BWD_STATES(prefix, false, false, T)                                                                   \
  LINEA_CUDA_BWD_STATES(prefix, true, false, T)                                                                    \
  LINEA_CUDA_BWD_PREP(prefix, false, false, false, T)                                                              \
  LINEA_CUDA_BWD_PREP(prefix, true, false, false, T)                                                               \
  LINEA_CUDA_BWD_GRAD(prefix, false, false, false, T, false)                                                       \
  LINEA_CUDA_BWD_GRAD(prefix, false, true, false, T, false)                                                        \
  LINEA_CUDA_BWD_GRAD(prefix, true, false, false, T, false)                                                        \
  LINEA_CUDA_BWD_GRAD(prefix, true, true, false, T, false)
#define LINEA_CUDA_BACKWARD_CHUNK_PHASES(prefix)                                                                   \
  LINEA_CUDA_BWD_CHUNK_TYPE(prefix, float)                                                                         \
  LINEA_CUDA_BWD_CHUNK_TYPE(prefix, linea::bf16)

// Per-key decays (gla, kda; gdn2 with channel gates).
#define LINEA_CUDA_BWD_PER_KEY_TYPE(prefix, T)                                                                     \
  LINEA_CUDA_BWD_STATES(prefix, false, true, T)                                                                    \
  LINEA_CUDA_BWD_STATES(prefix, true, true, T)                                                                     \
  LINEA_CUDA_BWD_PREP(prefix, false, true, false, T)                                                               \
  LINEA_CUDA_BWD_PREP(prefix, true, true, false, T)                                                                \
  LINEA_CUDA_BWD_PREP(prefix, true, true, true, T)                                                                 \
  LINEA_CUDA_BWD_GRAD(prefix, false, false, true, T, false)                                                        \
  LINEA_CUDA_BWD_GRAD(prefix, true, false, true, T, false)                                                         \
  LINEA_CUDA_BWD_GRAD(prefix, true, false, true, T, true)
#define LINEA_CUDA_BACKWARD_PER_KEY_PHASES(prefix)                                                                 \
  LINEA_CUDA_BWD_PER_KEY_TYPE(prefix, float)                                                                       \
  LINEA_CUDA_BWD_PER_KEY_TYPE(prefix, linea::bf16)

#if defined(LINEA_CUDA_EXTERN_BACKWARD_PHASES) && !defined(LINEA_BWD_TF32_FOR_16BIT) && !defined(LINEA_BWD_INTER_TERMS) && \
    !defined(LINEA_BWD_STATE16_TERMS) && !defined(LINEA_BWD_PREP16_TERMS) && !defined(LINEA_BWD_HDH_IN_INTER) && !defined(LINEA_BWD_GRAD_PIPE) &&         \
    !defined(LINEA_BWD_DIAG_SPAN) && !defined(LINEA_BWD_DIRECT_UNROLL) && !defined(LINEA_BWD_SPLIT_ACC) &&        \
    !defined(LINEA_BWD_STATE16_PER_KEY) && !defined(LINEA_BWD_STATE16_RING_ADDING) && !defined(LINEA_BWD_PER_KEY_INTER)
LINEA_CUDA_BACKWARD_CHUNK_PHASES(extern)
LINEA_CUDA_BACKWARD_PER_KEY_PHASES(extern)
#endif
