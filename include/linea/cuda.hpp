// linea/cuda.hpp — linea with the CUDA backend (include from .cu files compiled by nvcc).
//
//   #include <linea/cuda.hpp>
//   linea::chunkwise<linea::gated_delta, linea::read::identity, linea::backend::cuda>(args);  // device views
//   linea::chunkwise<linea::gated_delta, linea::read::identity, linea::backend::cuda>(args, {.stream = s});
#pragma once
#if !defined(__CUDACC__)
#error "<linea/cuda.hpp> is the CUDA backend: include it from a translation unit compiled by nvcc (a .cu file)"
#endif

#include "linea.hpp"
#include "read/ccq.hpp"
#include "backend/cuda/forms.hpp"
#include "backend/cuda/instances.hpp"  // extern declarations with -DLINEA_CUDA_EXTERN_INSTANCES
#include "backend/cuda/backward.hpp"
