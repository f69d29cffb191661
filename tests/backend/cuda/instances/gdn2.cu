// tests/backend/cuda/instances/gdn2.cu — the CUDA forms of the gdn2 rule, compiled once for linea's CUDA binaries
// (include/linea/backend/cuda/instances.hpp).
#include <linea/cuda.hpp>

LINEA_CUDA_INSTANCES(, linea::gdn2)
