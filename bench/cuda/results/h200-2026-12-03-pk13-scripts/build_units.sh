#!/bin/bash
# one nvcc at a time: the CUDA backward suite (main.cu + backward_test.cu + the 7 instance units) and conformance
set -u
R=/work/wt/pk13; B=/tmp/pk13/build; D=/work/main/.gpu/deps
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
cd $R
one() { local t=$(date +%s); nice nvcc $FL "$@" || echo "FAILED: $*"; echo "$(( $(date +%s) - t )) s: ${@: -1}"; }
for u in ${UNITS:-main backward_test conf gated_delta delta simple_gla additive kda gla gdn2}; do
  case $u in
    main|backward_test) one -DLINEA_CUDA_EXTERN_INSTANCES -c tests/backend/cuda/$u.cu -o $B/$u.o ;;
    conf) one -DLINEA_CUDA_EXTERN_INSTANCES -c tools/linea_cuda_conformance.cu -o $B/conf.o ;;
    *) one -c tests/backend/cuda/instances/$u.cu -o $B/$u.inst.o ;;
  esac
done
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $B/main.o $B/backward_test.o $B/*.inst.o -o $B/tests && echo linked tests
$L $B/conf.o $B/*.inst.o -o $B/conf && echo linked conf
echo ALL DONE
