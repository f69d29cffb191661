#!/bin/bash
# local build of comb15's units, one at a time (2 shared cores)
# (the flags: COMMON.md's nvcc line; O=/tmp/comb15/obj2 for call 2; whole_ab_main: the same whole_ab.cu with -I/work/main/include -DTREE=\"main\")
export PATH=/usr/local/cuda/bin:$PATH
FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -Iinclude -Itests -Itools -isystem /usr/include/eigen3"
cd ${TREE:-/work/wt/comb15}
O=${O:-/tmp/comb15/obj}; mkdir -p $O
D="-DLINEA_CUDA_EXTERN_BACKWARD_PHASES"
b() { local n=$1; shift; /usr/bin/time -f "$n %e s" nice -n 5 nvcc $FLAGS "$@" > $O/$n.log 2>&1 || echo "FAILED $n"; tail -1 $O/$n.log; }
for u in ${UNITS:-whole inst tests}; do
  case $u in
    whole) b whole_ab -DTREE='"comb15"' bench/cuda/results/h200-2026-12-03-comb15-scripts/whole_ab.cu -o $O/whole_ab_comb15 ;;
    inst) for r in ${RULES:-gated_delta delta kda gdn2 additive simple_gla gla backward_phases backward_phases_per_key}; do
            b $r.inst $D -c tests/backend/cuda/instances/$r.cu -o $O/$r.inst.o; done ;;
    tests) for t in segments_test main rules_test; do b $t $D -DLINEA_CUDA_EXTERN_INSTANCES -c tests/backend/cuda/$t.cu -o $O/$t.o; done
           b segments_bench $D -DLINEA_CUDA_EXTERN_INSTANCES -c bench/cuda/segments_bench.cu -o $O/segments_bench.o
           b conformance $D -DLINEA_CUDA_EXTERN_INSTANCES -c tools/linea_cuda_conformance.cu -o $O/conformance.o ;;
  esac
done
echo ALL DONE
