// python/src/cuda/simple_gla.cu — the CUDA entry points of linea::simple_gla for the Python module (cuda/entry.cuh).
#include "entry.cuh"

LINEA_PYTHON_CUDA_RULE(simple_gla);
