// tests/backend/cuda/instances/simple_gla.cu — the CUDA forms and backward of the simple_gla rule, compiled once for linea's CUDA binaries
// (include/linea/backend/cuda/instances.hpp).
#include <linea/cuda.hpp>

LINEA_CUDA_INSTANCES(, linea::simple_gla)
LINEA_CUDA_BACKWARD_INSTANCES(, linea::simple_gla, linea::read::identity)
LINEA_CUDA_CCQ_BACKWARD_INSTANCES(, linea::simple_gla)
