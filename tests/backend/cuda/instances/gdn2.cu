// tests/backend/cuda/instances/gdn2.cu — the CUDA forms and backward of the gdn2 rule, compiled once for linea's CUDA binaries
// (include/linea/backend/cuda/instances.hpp).
#include <linea/cuda.hpp>

LINEA_CUDA_INSTANCES(, linea::gdn2)
LINEA_CUDA_BACKWARD_INSTANCES(, linea::gdn2, linea::read::identity)
LINEA_CUDA_CCQ_BACKWARD_INSTANCES(, linea::gdn2)
