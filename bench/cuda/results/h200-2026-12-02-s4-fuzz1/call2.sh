#!/usr/bin/env bash
# fuzz1's second H200 call (2026-12-02, session 4): the fuzz driver after the fixes (forms.hpp's chunkwise limit
# before any launch is compiled into the driver; backward.hpp's T = 0 check is not: the driver links the merged
# tree's instance library, which holds the old backward entry), more cases and seeds, long sequences (segments),
# device-side indices, own streams and workspaces; errors_test.cu + main.cu (light group, this branch) for the
# new regression case; memcheck over small cases.
set -u
cd "$(dirname "$0")/../../../.."   # the worktree copy's root
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
xz -dc bin/cuda_fuzz.xz > /tmp/cuda_fuzz && chmod +x /tmp/cuda_fuzz
xz -dc bin/err_tests.xz > /tmp/err_tests && chmod +x /tmp/err_tests
F=tests/backend/cuda/fuzz
SEED=${SEED:-20261204}
el start
timeout 60 /tmp/err_tests > $OUT/err_tests.log 2>&1; echo "errors_test rc $?"; grep -E "test cases|assertions|ERROR" $OUT/err_tests.log | head
for r in 0 1 2 3; do
  timeout -s KILL ${MC_CAP:-75} compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/cuda_fuzz --seed $((SEED + 1)) \
    --from 0 --to 2000 --shard $r/4 --max-work 200000 --budget $(( ${MC_CAP:-75} - 15 )) --case-timeout 40 > /tmp/memcheck.$r 2>&1 &
done
SEED=$SEED N=${N:-10000} P=${P:-12} BUDGET=${BUDGET:-60} CASE_TIMEOUT=30 LOG=/tmp/fuzz $F/run_fuzz.sh /tmp/cuda_fuzz > $OUT/fuzz_summary.txt 2>&1
el fuzz-done
cp /tmp/fuzz.all $OUT/fuzz_results.log
wait
el memcheck-done
cat /tmp/memcheck.[0-3] > $OUT/memcheck.log
echo "== memcheck: results, error summaries"
grep -o '^RESULT [-0-9]* [A-Z]*' $OUT/memcheck.log | awk '{print $3}' | sort | uniq -c
grep -E 'ERROR SUMMARY|Invalid|out of bounds' $OUT/memcheck.log | sort | uniq -c | sort -rn | head -10
grep -E 'RESULT [-0-9]* FAIL' $OUT/memcheck.log | cut -c1-300 | head -10
echo "== fuzz"
head -2 $OUT/fuzz_summary.txt; grep '^total' $OUT/fuzz_summary.txt
grep '^RESULT [-0-9]* FAIL' $OUT/fuzz_results.log | sed 's/.*| //; s/ ([0-9]* ms)//; s/[0-9][0-9.]*/N/g' | sort | uniq -c | sort -rn | head -20
grep '^RESULT [-0-9]* FAIL' $OUT/fuzz_results.log | cut -c1-330 | head -25
el end
