// python/src/cuda/kda.cu — the CUDA entry points of linea::kda for the Python module (cuda/entry.cuh).
#include "entry.cuh"

LINEA_PYTHON_CUDA_RULE(kda);
