#!/bin/bash
F="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_80,code=compute_80 --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -DLINEA_CUDA_EXTERN_INSTANCES"
for root in /tmp/dec6/main_src /work/wt/dec6; do
  /usr/bin/time -f "$root tiles_test: wall %e s, cpu %U+%S s" /usr/local/cuda/bin/nvcc $F -I$root/include -I$root/tests -I$root/tools -I/usr/include/eigen3 -c $root/tests/backend/cuda/tiles_test.cu -o /tmp/dec6/ci2.o > /dev/null 2>>/tmp/dec6/ci_time2.txt
  echo "load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/dec6/ci_time2.txt
done
