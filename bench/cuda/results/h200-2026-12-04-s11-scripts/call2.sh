#!/usr/bin/env bash
# Session 11, call 2 (carry .gpu/deps .gpu/conformance): the merged tree verified — the suite (with the additive fast
# path's workspace case and the plan's slot modes), conformance, memcheck of the additive fast path's cases on their
# smaller workspace (direct, through phases 0/5, pieces), racecheck add16, fuzz — then linea_cuda_bench --backward.
set -u
LIMIT=${LIMIT:-440} FULL=1 FUZZ_SEED=${FUZZ_SEED:-20261231} FUZZ_CASES="1303 2431 212 2518 418" \
  MEMCHECK="CUDA backward: the additive fast path's workspace*;CUDA backward: the additive fast path direct at small*;CUDA backward: the additive fast path at small*;CUDA backward: the additive fast path over pieces*;CUDA backward: cuda::launch with a stream*" \
  RACECHECK="add16|CUDA backward: the additive fast path direct at small*" \
  bash bench/cuda/device_call.sh
date
