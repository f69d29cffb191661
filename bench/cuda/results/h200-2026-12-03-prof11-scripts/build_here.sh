#!/usr/bin/env bash
set -u
R=/work/wt/prof11; B=/tmp/prof11/build; D=/work/main/.gpu/deps; mkdir -p $B
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
cd $R
one() { local t=$(date +%s); nice nvcc $FL "$@" || echo "FAILED: $*"; echo "$(( $(date +%s) - t )) s: ${@: -1}"; }
for u in gated_delta kda delta gdn2 simple_gla gla additive; do one -c tests/backend/cuda/instances/$u.cu -o $B/$u.inst.o; done
one -DLINEA_CUDA_EXTERN_INSTANCES -c tests/backend/cuda/backward_test.cu -o $B/backward_test.o
one -DLINEA_CUDA_EXTERN_INSTANCES -c tests/backend/cuda/main.cu -o $B/main.o
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $B/main.o $B/backward_test.o $B/*.inst.o -o $B/tests && echo linked tests
one -DLINEA_CUDA_EXTERN_INSTANCES -c tools/linea_cuda_conformance.cu -o $B/conf.o
$L $B/conf.o $B/*.inst.o -o $B/conf && echo linked conf
one -DLINEA_CUDA_EXTERN_INSTANCES -c bench/cuda/bench_cuda.cu -o $B/bench.o
$L $B/bench.o $B/*.inst.o -o $B/bench && echo linked bench
one -lineinfo -DLINEA_BWD_SPLIT_ACC=0 -DGRAD_AB_RULE=linea::gated_delta bench/cuda/grad_ab.cu -o $B/ab_gd_nosplit
echo ALL DONE
