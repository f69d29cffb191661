#!/usr/bin/env bash
# seg19 call 1 (lead, 2026-12-04's fourth session): the merged tree's checks for pk19 + DerivedFactors and the
# additive backward over pieces of long sequences (backward/add16_pieces.hpp), then the pieces' A/B:
#   bash bench/cuda/results/h200-2026-12-04-seg19-scripts/call1.sh     (carry .gpu/deps .gpu/conformance)
# 1. bench/cuda/device_call.sh: every unit built; the suite's additive and per-key cases; conformance; memcheck and
#    racecheck (add16*) of the pieces case; perkey_delta_ab --check under memcheck and racecheck, then --short;
#    fuzz (seed 20261220, and the known cases)
# 2. A/B, alone on the GPU: linea_cuda_bench --backward for linear_attn and simple_gla at 1×32768 and 8×4096, the
#    library as it is (pieces where add16_plan_pieces cuts) and with LINEA_BWD_ADD16_PIECES_OFF=1, interleaved, twice
set -u
LIMIT=${LIMIT:-330} FULL=1 PERKEY_AB=1 PERKEY_ARGS=--short NO_BENCH=1 FUZZ_SEED=${FUZZ_SEED:-20261220} \
  FUZZ_CASES="1303 2431 212 2518 418" \
  SUITE_TC="${SUITE_TC:-*additive*,*kda*,*gdn2*,*gla*,*per-key*,*poisons*}" \
  MEMCHECK="CUDA backward: the additive fast path over pieces*" \
  RACECHECK="add16|CUDA backward: the additive fast path over pieces*" \
  bash bench/cuda/device_call.sh
echo "== A/B" | tee "$OUT/ab.txt"
for round in 1 2; do
  for r in linear_attn:1 simple_gla:1 linear_attn:8 simple_gla:8; do
    for off in "" 1; do
      if [ -n "$off" ]; then o=$(LINEA_BWD_ADD16_PIECES_OFF=1 LINEA_BENCH_BACKWARD=$r timeout 40 /tmp/b/bench --backward 2>&1 | grep '"kind":"backward"')
      else o=$(LINEA_BENCH_BACKWARD=$r timeout 40 /tmp/b/bench --backward 2>&1 | grep '"kind":"backward"'); fi
      echo "round $round pieces_off=${off:-0} $o" | tee -a "$OUT/ab.txt"
    done
  done
done
