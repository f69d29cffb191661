#include <linea/cuda.hpp>
LINEA_CUDA_BACKWARD_INSTANCES(, linea::gla, linea::read::identity)
