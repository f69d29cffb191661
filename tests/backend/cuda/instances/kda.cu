// tests/backend/cuda/instances/kda.cu — the CUDA forms and backward of the kda rule, compiled once for linea's CUDA binaries
// (include/linea/backend/cuda/instances.hpp).
#include <linea/cuda.hpp>

LINEA_CUDA_INSTANCES(, linea::kda)
LINEA_CUDA_BACKWARD_INSTANCES(, linea::kda, linea::read::identity)
LINEA_CUDA_CCQ_BACKWARD_INSTANCES(, linea::kda)
