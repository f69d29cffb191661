#include <linea/cuda.hpp>
LINEA_CUDA_BACKWARD_INSTANCES(, linea::gdn2, linea::read::identity)
