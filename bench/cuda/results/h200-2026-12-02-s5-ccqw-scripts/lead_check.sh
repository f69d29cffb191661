#!/usr/bin/env bash
# ccqw's checks for a device call over a tree already built by bench/cuda/build_nvcc.sh (the lead's final call):
# the CUDA suite's CCQ backward cases (with the issue #14 regression case), issue #14's failing fuzz cases re-run,
# and the fuzz driver's CCQ backward cases of seeds 20261206 / 20261204. ~60 s after the build. Prints as it goes.
#   bash bench/cuda/results/h200-2026-12-02-s5-ccqw-scripts/lead_check.sh BUILD_DIR
set -u
BUILD=${1:?build_nvcc.sh output directory}
F=/tmp/ccqw_fz; mkdir -p $F
DEPS=${DEPS:-../deps} bash tests/backend/cuda/fuzz/build_fuzz.sh $F "$BUILD/obj/*.inst.o" > $F/build.log 2>&1 &
BF=$!
T=bench/cuda/results/h200-2026-12-02-s5-ccqw-scripts/ccq_backward_time.cu  # the CCQ backward's time (after only)
( nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -DLINEA_CUDA_EXTERN_INSTANCES \
    -diag-suppress=20012,20013,20015,68,186 -Iinclude -Itests -I${DEPS:-../deps} -I${DEPS:-../deps}/eigen3 -c $T -o $F/time.o &&
  nvcc -gencode=arch=compute_90a,code=sm_90a $F/time.o $BUILD/obj/*.inst.o -o $F/time ) > $F/time_build.log 2>&1 &
BT=$!
timeout 90 $BUILD/tests/backend/cuda/linea_cuda_tests -tc='*CCQ*' 2>&1 | grep -E "ERROR|err :=|gradient :=|test cases|assertions"
wait $BF; tail -1 $F/build.log
wait $BT; [ -x $F/time ] && timeout 40 $F/time || tail -3 $F/time_build.log
for i in 770 822 1041 1256 1680 2054 2717 77 212; do timeout 30 $F/cuda_fuzz --seed 20261206 --from $i --to $((i + 1)) > $F/k$i.log 2>&1 & done
for i in 2735 4117; do timeout 30 $F/cuda_fuzz --seed 20261204 --from $i --to $((i + 1)) > $F/k$i.log 2>&1 & done
wait; cat $F/k*.log | grep '^RESULT' | cut -c1-260
for s in 20261206 20261204; do
  SEED=$s N=4200 P=7 BUDGET=35 CASE_TIMEOUT=20 LOG=$F/fz$s timeout 70 bash tests/backend/cuda/fuzz/run_fuzz.sh $F/cuda_fuzz --form backward --read ccq > $F/fuzz_$s.log 2>&1 &
done
wait
for s in 20261206 20261204; do echo "== seed $s"; grep -E "^== seed|total:" $F/fuzz_$s.log; grep 'RESULT [-0-9]* FAIL' $F/fuzz_$s.log | cut -c1-260 | head; done
