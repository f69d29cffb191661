#!/bin/bash
# build.sh UNIT... : I:<instance> | E:<path> (links the instances) ; one at a time
export PATH=/usr/local/cuda/bin:$PATH
cd /work/wt/gd18
FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -Iinclude -Itests -Itools -isystem /usr/include/eigen3 -I/work/main/.gpu/deps"
O=/tmp/gd18/obj
for u in "$@"; do
  s=$(date +%s)
  case $u in
    I:*) n=${u#I:}; nice -n 5 nvcc $FLAGS -DLINEA_CUDA_EXTERN_BACKWARD_PHASES -c tests/backend/cuda/instances/$n.cu -o $O/$n.inst.o > $O/$n.log 2>&1 ;;
    E:*) f=${u#E:}; n=$(basename $f .cu); nice -n 5 nvcc $FLAGS -lineinfo -DLINEA_CUDA_EXTERN_BACKWARD_PHASES -DLINEA_CUDA_EXTERN_INSTANCES -c $f -o $O/$n.o > $O/$n.log 2>&1 ;;
  esac && echo "$u ok $(( $(date +%s) - s )) s" || echo "$u FAILED"
done
echo DONE
