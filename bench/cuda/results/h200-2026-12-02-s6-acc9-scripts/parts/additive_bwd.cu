#include <linea/cuda.hpp>
LINEA_CUDA_BACKWARD_INSTANCES(, linea::additive, linea::read::identity)
