// tests/backend/cuda/delta_test.cu — the delta rule on the GPU, every form and read, against the float64 reference.
#include "backend/cuda/consistency.hpp"

LINEA_CUDA_CONSISTENCY(delta)
