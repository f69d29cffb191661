// tests/backend/cuda/gla_test.cu — the gla rule on the GPU, every form and read, against the float64 reference.
#include "backend/cuda/consistency.hpp"

LINEA_CUDA_CONSISTENCY(gla)
