#include <linea/cuda.hpp>
LINEA_CUDA_BACKWARD_INSTANCES(, linea::gated_delta, linea::read::identity)
