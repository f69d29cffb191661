#include <linea/cuda.hpp>
LINEA_CUDA_CCQ_BACKWARD_INSTANCES(, linea::kda)
