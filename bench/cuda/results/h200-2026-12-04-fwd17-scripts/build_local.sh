#!/bin/bash
# fwd17: the objects call1.sh links, built on the workstation one unit at a time (2 shared cores). src0: main 3bd08c2
# (the units this branch does not change: every other rule's instances, the suite's test units, the conformance
# runner); src1: the branch (additive and simple_gla's instance units, which instantiate scalar_chunk_kernel.hpp).
# fwd17_ab is standalone (bench/cuda/fwd17_ab.cu, instantiates its two rules itself).
export PATH=/usr/local/cuda/bin:$PATH
FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -Iinclude -Itests -Itools -isystem /usr/include/eigen3"
O=/tmp/fwd17/obj; D="-DLINEA_CUDA_EXTERN_BACKWARD_PHASES"; E="$D -DLINEA_CUDA_EXTERN_INSTANCES"
b() { local src=$1 n=$2; shift 2; [ -s $O/$n.o ] && { echo "$n exists"; return; }
  ( cd /tmp/fwd17/$src && /usr/bin/time -f "$n %e s" nice -n 5 nvcc $FLAGS "$@" -o $O/$n.o > $O/$n.log 2>&1 ) || echo "FAILED $n"; tail -1 $O/$n.log; }
b src1 additive.inst $D -c tests/backend/cuda/instances/additive.cu
b src1 simple_gla.inst $D -c tests/backend/cuda/instances/simple_gla.cu
for r in gated_delta delta kda gdn2 gla backward_phases backward_phases_per_key; do b src0 $r.inst $D -c tests/backend/cuda/instances/$r.cu; done
b src0 main $E -c tests/backend/cuda/main.cu
for t in rules_test segments_test tiles_test neg_inf_test sanitize_test launch_options_test; do b src0 $t $E -c tests/backend/cuda/$t.cu; done
b src0 conformance $E -c tools/linea_cuda_conformance.cu
( cd /tmp/fwd17/src1 && nice -n 5 nvcc $FLAGS bench/cuda/fwd17_ab.cu -o $O/fwd17_ab > $O/fwd17_ab.log 2>&1 ) || echo "FAILED fwd17_ab"
echo ALL DONE
