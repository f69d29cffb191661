// tests/backend/cuda/kda_test.cu — the kda rule on the GPU, every form and read, against the float64 reference.
#include "backend/cuda/consistency.hpp"

LINEA_CUDA_CONSISTENCY(kda)
