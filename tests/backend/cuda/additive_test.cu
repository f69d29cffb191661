// tests/backend/cuda/additive_test.cu — the additive rule on the GPU, every form and read, against the float64 reference.
#include "backend/cuda/consistency.hpp"

LINEA_CUDA_CONSISTENCY(additive)
