// python/src/cuda/gated_delta.cu — the CUDA entry points of linea::gated_delta for the Python module (cuda/entry.cuh).
#include "entry.cuh"

LINEA_PYTHON_CUDA_RULE(gated_delta);
