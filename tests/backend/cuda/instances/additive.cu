// tests/backend/cuda/instances/additive.cu — the CUDA forms and backward of the additive rule, compiled once for linea's CUDA binaries
// (include/linea/backend/cuda/instances.hpp).
#include <linea/cuda.hpp>

LINEA_CUDA_INSTANCES(, linea::additive)
LINEA_CUDA_BACKWARD_INSTANCES(, linea::additive, linea::read::identity)
LINEA_CUDA_CCQ_BACKWARD_INSTANCES(, linea::additive)
