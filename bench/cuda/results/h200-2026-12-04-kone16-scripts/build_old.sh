#!/bin/bash
export PATH=/usr/local/cuda/bin:$PATH
cd /tmp/kone16/old
FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -Iinclude -Itests -Itools -isystem /usr/include/eigen3 -I/work/main/.gpu/deps"
O=/tmp/kone16/obj_old
for u in backward_phases_per_key additive simple_gla gla kda gdn2 backward_phases; do  # (main 430ab74: unchanged by kone16; backward_phases: "old")
  s=$(date +%s)
  nice -n 5 nvcc $FLAGS -DLINEA_CUDA_EXTERN_BACKWARD_PHASES -c tests/backend/cuda/instances/$u.cu -o $O/$u.inst.o > $O/$u.log 2>&1 && echo "$u ok $(( $(date +%s) - s )) s" || echo "$u FAILED"
done
for s in tests/backend/cuda/fuzz/cuda_fuzz.cu bench/cuda/bench_cuda.cu tests/backend/cuda/main.cu; do
  n=$(basename $s .cu); t=$(date +%s)
  nice -n 5 nvcc $FLAGS -DLINEA_CUDA_EXTERN_BACKWARD_PHASES -DLINEA_CUDA_EXTERN_INSTANCES -c $s -o $O/$n.o > $O/$n.log 2>&1 && echo "$n ok $(( $(date +%s) - t )) s" || echo "$n FAILED"
done
echo DONE
