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
timeout 90 $BUILD/tests/backend/cuda/linea_cuda_tests -tc='*CCQ*' 2>&1 | grep -E "ERROR|err :=|gradient :=|test cases|assertions"
wait $BF; tail -1 $F/build.log
for i in 770 822 1041 1256 1680 2054 2717 77 212; do timeout 30 $F/cuda_fuzz --seed 20261206 --from $i --to $((i + 1)) > $F/k$i.log 2>&1 & done
for i in 2735 4117; do timeout 30 $F/cuda_fuzz --seed 20261204 --from $i --to $((i + 1)) > $F/k$i.log 2>&1 & done
wait; cat $F/k*.log | grep '^RESULT' | cut -c1-260
for s in 20261206 20261204; do
  SEED=$s N=4200 P=7 BUDGET=35 CASE_TIMEOUT=20 LOG=$F/fz$s timeout 70 bash tests/backend/cuda/fuzz/run_fuzz.sh $F/cuda_fuzz --form backward --read ccq > $F/fuzz_$s.log 2>&1 &
done
wait
for s in 20261206 20261204; do echo "== seed $s"; grep -E "^== seed|total:" $F/fuzz_$s.log; grep 'RESULT [-0-9]* FAIL' $F/fuzz_$s.log | cut -c1-260 | head; done
