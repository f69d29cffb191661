// tests/backend/cuda/instances/gla.cu — the CUDA forms of the gla rule, compiled once for linea's CUDA binaries
// (include/linea/backend/cuda/instances.hpp).
#include <linea/cuda.hpp>

LINEA_CUDA_INSTANCES(, linea::gla)
