#!/usr/bin/env bash
# The open cases of fuzz1's call 2, for the next H200 call (about 10 s after a start): the six CCQ forwards with
# device-side cu_seqlens on a non-blocking stream (suspected harness race, the driver now synchronises first), a few
# dλ cases of the CCQ backward under extreme gates, and the bf16 / fp32 one-token edge cases. Run as
#   bash .gpu/fuzz1/bench/cuda/results/h200-2026-12-02-s4-fuzz1/rerun_open.sh
# from the repository root with .gpu/fuzz1 carried (bin/cuda_fuzz.xz: the driver of this branch's last commit,
# linked with the merged tree's instance library as in call 2; with an instance library of this branch the T = 0
# backward cases of call 2, e.g. 948 and 410 of seed 20261205, pass too).
set -u
cd "$(dirname "$0")/../../../.."
xz -dc bin/cuda_fuzz.xz > /tmp/cuda_fuzz && chmod +x /tmp/cuda_fuzz
for i in 6144 8248 8801 1387 945 6801 2735 1414 4117; do
  /tmp/cuda_fuzz --seed 20261204 --from $i --to $((i + 1)) | grep '^RESULT' | cut -c1-400
done
for i in 288 914 948 410; do
  /tmp/cuda_fuzz --seed 20261205 --from $i --to $((i + 1)) | grep '^RESULT' | cut -c1-400
done
