// tests/backend/cuda/gdn2_test.cu — the gdn2 rule on the GPU, every form and read, against the float64 reference.
#include "backend/cuda/consistency.hpp"

LINEA_CUDA_CONSISTENCY(gdn2)
