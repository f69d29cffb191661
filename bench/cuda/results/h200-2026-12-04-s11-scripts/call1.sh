#!/usr/bin/env bash
# Session 11, call 1 (carry .gpu/deps .gpu/conformance): main 3cbfc6a verified (the suite with 4d6c4ee's packed-batch
# pieces subcase, conformance, memcheck/racecheck of the pieces case, fuzz), perkey_delta_ab timings, the backward
# bench, then ncu of the gdn2 and kda forward (perkey_delta_kernel) on perkey_ab's library path.
set -u
LIMIT=${LIMIT:-340} FULL=1 PERKEY_AB=1 PERKEY_ARGS=--short FUZZ_SEED=${FUZZ_SEED:-20261230} \
  FUZZ_CASES="1303 2431 212 2518 418" \
  MEMCHECK="CUDA backward: the additive fast path over pieces*" \
  RACECHECK="add16|CUDA backward: the additive fast path over pieces*" \
  bash bench/cuda/device_call.sh
B=/tmp/b
if [ -x $B/perkey_ab ]; then
  for r in "update::delta2" "update::delta>"; do
    timeout 90 ncu --set full --kernel-name-base demangled -k "regex:linea::cuda_detail::perkey_delta_kernel<.*$r" -c 1 \
      $B/perkey_ab --short > /tmp/ncu_$$.txt 2>&1
    echo "== ncu $r rc $?" >> $OUT/ncu.txt
    grep -v -E '^==PROF==|^\{' /tmp/ncu_$$.txt | head -250 >> $OUT/ncu.txt
  done
fi
date
