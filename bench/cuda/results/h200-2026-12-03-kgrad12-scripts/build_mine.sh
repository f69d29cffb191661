#!/usr/bin/env bash
# waits for build_other.sh, then builds what kgrad12's code changes (one nvcc at a time)
set -u
true
R=/work/wt/kgrad12; B=/tmp/kgrad12/build; D=/work/main/.gpu/deps; mkdir -p $B
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
cd $R
one() { local t=$(date +%s); nice nvcc $FL "$@" || echo "FAILED: $*"; echo "$(( $(date +%s) - t )) s: ${@: -1}"; }
for u in ${ABS:-gdn2 gla kda}; do one -Xptxas -v -DGRAD_AB_RULE=linea::$u bench/cuda/grad_ab.cu -o $B/ab_$u > $B/ab_$u.ptxas 2>&1; tail -1 $B/ab_$u.ptxas; done
for u in kda gdn2 gla; do one -c tests/backend/cuda/instances/$u.cu -o $B/$u.inst.o; done
one -DLINEA_CUDA_EXTERN_INSTANCES -c tests/backend/cuda/backward_test.cu -o $B/backward_test.o
one -DLINEA_CUDA_EXTERN_INSTANCES -c tests/backend/cuda/main.cu -o $B/main.o
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $B/main.o $B/backward_test.o $B/*.inst.o -o $B/tests && echo linked tests
one -DLINEA_CUDA_EXTERN_INSTANCES -c tools/linea_cuda_conformance.cu -o $B/conf.o
$L $B/conf.o $B/*.inst.o -o $B/conf && echo linked conf
echo ALL DONE
