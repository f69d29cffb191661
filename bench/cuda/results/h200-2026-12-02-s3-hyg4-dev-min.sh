#!/usr/bin/env bash
# hyg4's device call (short form) (2026-12-02, #13 close-out): the CUDA tests of the touched TUs, compute-sanitizer racecheck and
# memcheck on the touched cases, the decode kernel's prefetch variants against the library's kernel in one process,
# and main's test binary (CI build of 602ef26) under racecheck with per-hazard detail for gla's per-key kernel.
# Binaries built on the CPU machine (nvcc 13, sm_90a, -lineinfo), xz-packed in bins/.
set -u
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.mem --format=csv,noheader
mkdir -p b && for f in bins/*.xz; do n=b/$(basename "$f" .xz); xz -dc "$f" > $n && chmod +x $n; done; ls b
T=b/linea_cuda_tests; M=b/main_linea_cuda_tests
PIPE="-tc=*NaN or inf input poisons only what the recurrence poisons (delta*"
CPW="-tc=CUDA context parallel: the scratch*"
san() { local name=$1 lim=$2; shift 2; el "$name"; timeout $lim compute-sanitizer --error-exitcode 9 "$@" > $OUT/san-$name.log 2>&1; echo "$name rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:" $OUT/san-$name.log; }
el tests
timeout 45 $T > $OUT/tests.log 2>&1; echo "tests rc $?"
grep -E "ERROR|FAILED|test cases|assertions|skipped" $OUT/tests.log | head -30
san racecheck-pipelines 25 --tool racecheck $T "$PIPE"
el variants
timeout 25 b/linea_cuda_bench --decode-variants > $OUT/decode-variants.jsonl 2> $OUT/decode-variants.err; echo "variants rc $?"
san memcheck-cp 20 --tool memcheck $T "-tc=CUDA context parallel*" "-tce=*NCCL*"
san racecheck-cp-workspace 12 --tool racecheck $T "$CPW"
san main-racecheck-hazards 15 --tool racecheck --racecheck-report hazard --print-limit 40 --kernel-name kns=perkey_delta_kernel $M "$PIPE"
el done
