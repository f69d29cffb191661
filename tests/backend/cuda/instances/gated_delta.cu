// tests/backend/cuda/instances/gated_delta.cu — the CUDA forms and backward of the gated_delta rule, compiled once for linea's CUDA binaries
// (include/linea/backend/cuda/instances.hpp).
#include <linea/cuda.hpp>

LINEA_CUDA_INSTANCES(, linea::gated_delta)
LINEA_CUDA_BACKWARD_INSTANCES(, linea::gated_delta, linea::read::identity)
LINEA_CUDA_CCQ_BACKWARD_INSTANCES(, linea::gated_delta)
