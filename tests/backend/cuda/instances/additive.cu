// tests/backend/cuda/instances/additive.cu — the CUDA forms of the additive rule, compiled once for linea's CUDA binaries
// (include/linea/backend/cuda/instances.hpp).
#include <linea/cuda.hpp>

LINEA_CUDA_INSTANCES(, linea::additive)
