// python/src/cuda/gdn2.cu — the CUDA entry points of linea::gdn2 for the Python module (cuda/entry.cuh).
#include "entry.cuh"

LINEA_PYTHON_CUDA_RULE(gdn2);
