#!/usr/bin/env bash
# build grad9's device binaries here, one nvcc at a time (sm_90a only)
set -u
R=/work/wt/grad9; B=/tmp/grad9/b; D=/work/main/.gpu/deps
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
cd $R
one() { local t=$(date +%s); nice nvcc $FL "$@" || echo "FAILED: $*"; echo "$(( $(date +%s) - t )) s: ${@: -1}"; }
for r in gated_delta kda; do one -DLINEA_CUDA_EXTERN_INSTANCES -lineinfo -DGRAD_AB_RULE=linea::$r -c bench/cuda/grad_ab.cu -o $B/grad_ab_$r.o; done
for u in gated_delta kda delta gdn2 simple_gla gla additive; do one -c tests/backend/cuda/instances/$u.cu -o $B/$u.inst.o; done
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
for r in gated_delta kda; do $L $B/grad_ab_$r.o $B/*.inst.o -o $B/ab_$r && echo linked ab_$r; done
one -DLINEA_CUDA_EXTERN_INSTANCES -c tests/backend/cuda/backward_test.cu -o $B/backward_test.o
one -DLINEA_CUDA_EXTERN_INSTANCES -c tests/backend/cuda/main.cu -o $B/main.o
$L $B/main.o $B/backward_test.o $B/*.inst.o -o $B/tests && echo linked tests
one -DLINEA_CUDA_EXTERN_INSTANCES -c tools/linea_cuda_conformance.cu -o $B/conf.o
$L $B/conf.o $B/*.inst.o -o $B/conf && echo linked conf
for r in delta gdn2 simple_gla gla; do one -DLINEA_CUDA_EXTERN_INSTANCES -lineinfo -DGRAD_AB_RULE=linea::$r -c bench/cuda/grad_ab.cu -o $B/grad_ab_$r.o && $L $B/grad_ab_$r.o $B/*.inst.o -o $B/ab_$r && echo linked ab_$r; done
echo ALL DONE
