// python/src/cuda/delta.cu — the CUDA entry points of linea::delta for the Python module (cuda/entry.cuh).
#include "entry.cuh"

LINEA_PYTHON_CUDA_RULE(delta);
