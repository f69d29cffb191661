#include <linea/cuda.hpp>
LINEA_CUDA_BACKWARD_INSTANCES(, linea::delta, linea::read::identity)
