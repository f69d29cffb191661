#include <linea/cuda.hpp>
LINEA_CUDA_INSTANCES(, linea::additive)
