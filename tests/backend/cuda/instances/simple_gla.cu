// tests/backend/cuda/instances/simple_gla.cu — the CUDA forms of the simple_gla rule, compiled once for linea's CUDA binaries
// (include/linea/backend/cuda/instances.hpp).
#include <linea/cuda.hpp>

LINEA_CUDA_INSTANCES(, linea::simple_gla)
