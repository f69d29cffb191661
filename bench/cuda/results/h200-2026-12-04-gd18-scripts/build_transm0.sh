#!/bin/bash
# the TransM = 0 builds of backward_phases and the suite (gd18's A/B of the library default)
# (call 2's tree, commit e37f57d, rebased onto main as dce4b90: chunk_grad16_kernel.hpp then read LINEA_BWD_GRAD16_TRANSM for TransM's default,
# on; =0 built the suite with TransM off — the library's default since, with the macro gone)
export PATH=/usr/local/cuda/bin:$PATH
cd /work/wt/gd18
FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -Iinclude -Itests -Itools -isystem /usr/include/eigen3 -I/work/main/.gpu/deps -DLINEA_BWD_GRAD16_TRANSM=0"
O=/tmp/gd18/obj
s=$(date +%s); nice -n 5 nvcc $FLAGS -DLINEA_CUDA_EXTERN_BACKWARD_PHASES -c tests/backend/cuda/instances/backward_phases.cu -o $O/backward_phases_m0.inst.o > $O/backward_phases_m0.log 2>&1 && echo "bp m0 ok $(( $(date +%s) - s ))" || echo "bp m0 FAILED"
s=$(date +%s); nice -n 5 nvcc $FLAGS -lineinfo -DLINEA_CUDA_EXTERN_BACKWARD_PHASES -DLINEA_CUDA_EXTERN_INSTANCES -c bench/cuda/results/h200-2026-12-04-gd18-scripts/gd18_backward16_test.cu -o $O/gd18_backward16_test_m0.o > $O/t_m0.log 2>&1 && echo "t m0 ok $(( $(date +%s) - s ))" || echo "t m0 FAILED"
echo DONE
