// tools/linea_cuda_conformance.cu — the conformance runner with the CUDA backend's forms (run on a GPU machine):
//   linea_cuda_conformance ../shared/conformance/fla ../shared/conformance/linea
#include "conformance/cuda_forms.hpp"
#define LINEA_CONFORMANCE_CUDA 1
#include "linea_conformance.cpp"
