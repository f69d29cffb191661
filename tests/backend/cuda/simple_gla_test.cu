// tests/backend/cuda/simple_gla_test.cu — the simple_gla rule on the GPU, every form and read, against the float64 reference.
#include "backend/cuda/consistency.hpp"

LINEA_CUDA_CONSISTENCY(simple_gla)
