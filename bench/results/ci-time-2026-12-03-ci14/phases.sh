#!/usr/bin/env bash
while kill -0 18059 2>/dev/null; do sleep 5; done
export PATH=$PATH:/usr/local/cuda/bin
F="-O3 -DNDEBUG -Xcompiler=-fPIC -gencode=arch=compute_90a,code=sm_90a -std=c++20 --expt-relaxed-constexpr -diag-suppress=20012,20013,20015 -isystem=/usr/include/eigen3 -DLINEA_CUDA_EXTERN_BACKWARD_PHASES -I/work/wt/ci14/include"
for u in backward_phases backward_phases_per_key; do
  l0=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f "$u wall=%e user=%U sys=%S" nvcc $F --time /tmp/ci14-an/t/$u.csv -c /work/wt/ci14/tests/backend/cuda/instances/$u.cu -o /tmp/ci14-an/t/$u.o 2>&1 | tail -1
  echo "  load before/after: $l0 $(cut -d' ' -f1 /proc/loadavg)"
done
