#include <linea/cuda.hpp>
LINEA_CUDA_BACKWARD_INSTANCES(, linea::simple_gla, linea::read::identity)
