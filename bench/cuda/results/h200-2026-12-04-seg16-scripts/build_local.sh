#!/bin/bash
# seg16: local build, one unit at a time (2 shared cores). UNITS: fixed (the units this branch does not change, from a
# snapshot of the tree in SRC) or mine (the rules that only add + the test and bench units that this branch changes).
export PATH=/usr/local/cuda/bin:$PATH
FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -Iinclude -Itests -Itools -isystem /usr/include/eigen3"
cd ${SRC:-/work/wt/seg16}
O=${O:-/tmp/seg16/obj}; mkdir -p $O
D="-DLINEA_CUDA_EXTERN_BACKWARD_PHASES"
b() { local n=$1; shift; /usr/bin/time -f "$n %e s" nice -n 5 nvcc $FLAGS "$@" > $O/$n.log 2>&1 || echo "FAILED $n"; tail -1 $O/$n.log; }
case ${UNITS:-mine} in
  fixed) for r in gated_delta delta kda gdn2 backward_phases backward_phases_per_key; do
           b $r.inst $D -c tests/backend/cuda/instances/$r.cu -o $O/$r.inst.o; done
         b main $D -DLINEA_CUDA_EXTERN_INSTANCES -c tests/backend/cuda/main.cu -o $O/main.o ;;
  mine) for r in ${RULES:-gla simple_gla additive}; do b $r.inst $D -c tests/backend/cuda/instances/$r.cu -o $O/$r.inst.o; done
        for t in ${TESTS:-segments_test}; do b $t $D -DLINEA_CUDA_EXTERN_INSTANCES -c tests/backend/cuda/$t.cu -o $O/$t.o; done
        b segments_bench $D -DLINEA_CUDA_EXTERN_INSTANCES -c bench/cuda/segments_bench.cu -o $O/segments_bench.o ;;
esac
echo ALL DONE
