#!/usr/bin/env bash
# fuzz1's H200 call (2026-12-02, session 4): the CUDA fuzz driver (tests/backend/cuda/fuzz/), built off-device
# (tests/backend/cuda/fuzz/build_fuzz.sh, sm_90a, linked with the instance library of the merged tree's CI build),
# run as 12 processes for ~75 s, and beside it a subset of small cases under compute-sanitizer memcheck.
# Run as bash .gpu/fuzz1/bench/cuda/results/h200-2026-12-02-s4-fuzz1/call1.sh (.gpu/fuzz1: a copy of the fuzz1 worktree plus bin/cuda_fuzz.xz).
set -u
cd "$(dirname "$0")/../../../.."   # the worktree copy's root
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
xz -dc bin/cuda_fuzz.xz > /tmp/cuda_fuzz && chmod +x /tmp/cuda_fuzz
F=tests/backend/cuda/fuzz
SEED=${SEED:-20261202}
el start
# memcheck: 4 processes over small cases (B·T·HV·K·V <= 2e5), their own shards of another seed
for r in 0 1 2 3; do
  timeout -s KILL ${MC_CAP:-80} compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/cuda_fuzz --seed $((SEED + 1)) \
    --from 0 --to 400 --shard $r/4 --max-work 200000 --budget $(( ${MC_CAP:-80} - 15 )) --case-timeout 40 > /tmp/memcheck.$r 2>&1 &
done
SEED=$SEED N=${N:-3000} P=${P:-12} BUDGET=${BUDGET:-75} CASE_TIMEOUT=20 LOG=/tmp/fuzz $F/run_fuzz.sh /tmp/cuda_fuzz > $OUT/fuzz_summary.txt 2>&1
el fuzz-done
cp /tmp/fuzz.all $OUT/fuzz_results.log
wait
el memcheck-done
cat /tmp/memcheck.[0-3] > $OUT/memcheck.log
echo "== memcheck: cases run, results, error summaries"
grep -c '^RESULT' $OUT/memcheck.log
grep -o '^RESULT [-0-9]* [A-Z]*' $OUT/memcheck.log | awk '{print $3}' | sort | uniq -c
grep -E 'ERROR SUMMARY|Invalid|out of bounds|RESULT [-0-9]* FAIL' $OUT/memcheck.log | sort | uniq -c | sort -rn | head -20
echo "== fuzz"
head -c 7000 $OUT/fuzz_summary.txt
el end
