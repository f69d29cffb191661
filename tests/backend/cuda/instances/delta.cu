// tests/backend/cuda/instances/delta.cu — the CUDA forms and backward of the delta rule, compiled once for linea's CUDA binaries
// (include/linea/backend/cuda/instances.hpp).
#include <linea/cuda.hpp>

LINEA_CUDA_INSTANCES(, linea::delta)
LINEA_CUDA_BACKWARD_INSTANCES(, linea::delta, linea::read::identity)
LINEA_CUDA_CCQ_BACKWARD_INSTANCES(, linea::delta)
