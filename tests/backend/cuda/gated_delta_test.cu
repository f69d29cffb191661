// tests/backend/cuda/gated_delta_test.cu — the gated_delta rule on the GPU, every form and read, against the float64 reference.
#include "backend/cuda/consistency.hpp"

LINEA_CUDA_CONSISTENCY(gated_delta)
