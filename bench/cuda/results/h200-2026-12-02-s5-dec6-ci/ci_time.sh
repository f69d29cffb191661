#!/bin/bash
# CI-like compile times (build_nvcc.sh's flags: sm_90a + compute_80 PTX, extern instances), main then branch, one at a time
F="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_80,code=compute_80 --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186"
t() { local root=$1 src=$2 tag=$3 ext=$4; local s=$(date +%s.%N);
  /usr/local/cuda/bin/nvcc $F $ext -I$root/include -I$root/tests -I$root/tools -I/usr/include/eigen3 -c $root/$src -o /tmp/dec6/ci_$tag.o > /tmp/dec6/ci_$tag.log 2>&1; local rc=$?
  echo "$tag $src rc=$rc $(echo "$(date +%s.%N) - $s" | bc) s load $(cut -d' ' -f1 /proc/loadavg)"; }
for src in tests/backend/cuda/tiles_test.cu bench/cuda/bench_cuda.cu; do
  n=$(basename $src .cu)
  t /tmp/dec6/main_src $src main_$n -DLINEA_CUDA_EXTERN_INSTANCES
  t /work/wt/dec6 $src dec6_$n -DLINEA_CUDA_EXTERN_INSTANCES
done
t /tmp/dec6/main_src tests/backend/cuda/instances/gated_delta.cu main_inst_gd ""
t /work/wt/dec6 tests/backend/cuda/instances/gated_delta.cu dec6_inst_gd ""
