#!/usr/bin/env bash
# ab.sh: gated_delta's instance unit, before (e98ccba) and after (ci14), alternately; wall, user, sys per compile.
export PATH=$PATH:/usr/local/cuda/bin
F="-O3 -DNDEBUG -Xcompiler=-fPIC -gencode=arch=compute_90a,code=sm_90a -std=c++20 --expt-relaxed-constexpr -diag-suppress=20012,20013,20015 -isystem=/usr/include/eigen3"
for round in 1 2; do
  for side in before after; do
    if [ $side = before ]; then inc=/tmp/ci14-an/before/include; def=""; else inc=/work/wt/ci14/include; def="-DLINEA_CUDA_EXTERN_BACKWARD_PHASES"; fi
    l0=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -f "$side round$round wall=%e user=%U sys=%S" nvcc $F $def -I$inc --time /tmp/ci14-an/t/ab_${side}_$round.csv -c /work/wt/ci14/tests/backend/cuda/instances/gated_delta.cu -o /tmp/ci14-an/t/ab_${side}_$round.o 2>&1 | tail -1
    echo "  load before/after: $l0 $(cut -d' ' -f1 /proc/loadavg)"
  done
done
