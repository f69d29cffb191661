// python/src/cuda/gla.cu — the CUDA entry points of linea::gla for the Python module (cuda/entry.cuh).
#include "entry.cuh"

LINEA_PYTHON_CUDA_RULE(gla);
