#!/bin/bash
export PATH=/usr/local/cuda/bin:$PATH
FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -Iinclude -Itests -Itools -isystem /usr/include/eigen3"
cd /tmp/seg16/src1; O=/tmp/seg16/obj; D="-DLINEA_CUDA_EXTERN_BACKWARD_PHASES"
b() { local n=$1; shift; /usr/bin/time -f "$n %e s" nice -n 5 nvcc $FLAGS "$@" > $O/$n.log 2>&1 || echo "FAILED $n"; tail -1 $O/$n.log; }
for r in gated_delta delta kda gdn2; do b $r.inst $D -c tests/backend/cuda/instances/$r.cu -o $O/$r.inst.o; done
b main $D -DLINEA_CUDA_EXTERN_INSTANCES -c tests/backend/cuda/main.cu -o $O/main.o
echo ALL DONE
