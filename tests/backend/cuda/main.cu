// tests/backend/cuda/main.cu — the CUDA test binary (linea_cuda_tests): run it on a machine with a GPU.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
