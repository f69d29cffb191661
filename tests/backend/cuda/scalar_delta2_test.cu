// tests/backend/cuda/scalar_delta2_test.cu — the test-only rule (tests/support/rules.hpp: Gated DeltaNet's scalar
// decay with GDN-2's erase and write gates), which no CUDA kernel was written for, on every form and read against
// the float64 reference: the kernels run it through the policies' hooks.
#include "backend/cuda/consistency.hpp"
#include "support/rules.hpp"

LINEA_CUDA_CONSISTENCY(testing::scalar_delta2)
