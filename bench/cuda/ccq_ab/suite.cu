// bench/cuda/ccq_ab/suite.cu — the CUDA suite's chunkwise cases (tests/backend/cuda/consistency.hpp: every rule, the
// identity and CCQ reads, float32 / bf16 / fp16, against the float64 reference) in one binary compiled without the
// instance units: a check of the CCQ kernels that needs one TU instead of the suite's eight.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "backend/cuda/consistency.hpp"

#define CCQ9_CHUNKWISE(rule)                                                        \
  TEST_CASE("cuda " #rule ": chunkwise form vs float64 reference (CCQ)") {          \
    linea::testing::consistency_suite<linea::rule, linea::testing::cuda_chunkwise>(); \
  }
CCQ9_CHUNKWISE(additive)
CCQ9_CHUNKWISE(simple_gla)
CCQ9_CHUNKWISE(gla)
CCQ9_CHUNKWISE(delta)
CCQ9_CHUNKWISE(gated_delta)
CCQ9_CHUNKWISE(kda)
CCQ9_CHUNKWISE(gdn2)
