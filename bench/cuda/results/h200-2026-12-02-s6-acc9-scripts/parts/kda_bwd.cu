#include <linea/cuda.hpp>
LINEA_CUDA_BACKWARD_INSTANCES(, linea::kda, linea::read::identity)
