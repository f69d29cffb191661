#!/bin/bash
# waits for build_ab.sh, then conformance, then links tests and conf
R=/work/wt/grad12; B=/tmp/grad12/build; D=/work/main/.gpu/deps
while pgrep -f "build_ab.sh" > /dev/null; do sleep 10; done
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
cd $R
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $B/main.o $B/backward_test.o $B/*.inst.o -o $B/tests && echo "linked tests $(date -u +%T)"
t=$(date +%s); nice nvcc $FL -DLINEA_CUDA_EXTERN_INSTANCES -c tools/linea_cuda_conformance.cu -o $B/conf.o || echo FAILED conf; echo "$(( $(date +%s) - t )) s: conf $(date -u +%T)"
$L $B/conf.o $B/*.inst.o -o $B/conf && echo "linked conf $(date -u +%T)"
