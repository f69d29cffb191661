// python/src/cuda/additive.cu — the CUDA entry points of linea::additive for the Python module (cuda/entry.cuh).
#include "entry.cuh"

LINEA_PYTHON_CUDA_RULE(additive);
