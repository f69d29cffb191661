#!/bin/bash
# tiles_test.cu's decode cases as a unit of their own (the library's step compiled in, no instance archive)
set -e
cd /work/wt/dec6
{ echo '#include <random>'; echo '#include "backend/cuda/consistency.hpp"';
  sed -n '/^\/\/ The decode kernel.s variants/,$p' tests/backend/cuda/tiles_test.cu; } > /tmp/dec6/decode_cases.cu
F="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Iinclude -Itests -I/usr/include/eigen3"
/usr/local/cuda/bin/nvcc $F -c tests/backend/cuda/main.cu -o /tmp/dec6/main.o
/usr/local/cuda/bin/nvcc $F -Xptxas -warn-spills -c /tmp/dec6/decode_cases.cu -o /tmp/dec6/decode_cases.o
/usr/local/cuda/bin/nvcc -gencode=arch=compute_90a,code=sm_90a /tmp/dec6/main.o /tmp/dec6/decode_cases.o -o /tmp/dec6/decode_tests
echo BUILT
