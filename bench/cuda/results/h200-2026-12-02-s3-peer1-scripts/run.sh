#!/usr/bin/env bash
# peer1: FlashInfer 0.7.4's Hopper Gated DeltaNet prefill (CuTe DSL kernels JIT-compiled by nvidia-cutlass-dsl 4.8.1,
# cu13 flavour), one call, no internet. linea's binary does not fit beside it (64 MiB carry): linea's numbers are
# the s2final calls' (same CI-built linea_cuda_bench, same card, same day).
set -u
cd "$(dirname "$0")"
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
S=/tmp/fisite; mkdir -p $S
tar -xJf fi_site.tar.xz -C $S & tar -xJf cutlass_so.tar.xz -C $S; wait
el unpacked
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
export PYTHONPATH=$S:$S/nvidia_cutlass_dsl/dsl_packages PYTHONUNBUFFERED=1
CHECK="5x300 1x1000" SHAPES="8x4096 1x32768 2x16384" WARMUP=3 REPS=10 ROUNDS=3 timeout ${FI_CAP:-60} \
  python3 -W ignore flashinfer_bench.py > $OUT/flashinfer.jsonl 2> $OUT/flashinfer.err; echo "flashinfer rc $?"
el done
cat $OUT/flashinfer.jsonl | cut -c1-400; tail -c 2000 $OUT/flashinfer.err
