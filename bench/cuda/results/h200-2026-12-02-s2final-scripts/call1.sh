#!/usr/bin/env bash
# Lead's final device call 1 (2026-12-02, merged tree 248b1d0): build on the device, CUDA suite, conformance,
# sanitizers on what changed (bwd4 state passes, hyg3 NaN pipelines, ccq2 chunked CCQ), module build.
set -u
cd "$(dirname "$0")"
F=$PWD; R=$(cd ../.. && pwd)
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.mem --format=csv,noheader
el unpack
mkdir -p bg && tar -xJf bins.tar.xz -C bg && for x in nanobind fla_tests wheels; do ln -sfn $F/extra/$x $R/$x; done && ls -R bg | tr '\n' ' '; echo
B=$PWD/bg; C=$(cd ../conformance && pwd)
(cd $R && bash $F/device_build.sh > $OUT/python_build.log 2>&1; echo "module build rc $? at $(( $(date +%s) - START )) s" >> $OUT/python_build.log) &
BUILD=$!
el tests
timeout 220 $B/linea_cuda_tests > $OUT/tests.log 2>&1; echo "tests rc $?"
grep -E "ERROR|FAILED|test cases|assertions|skipped" $OUT/tests.log | head -40
el conformance
timeout 60 $B/linea_cuda_conformance $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?"
grep -E '^FAIL' $OUT/conformance.log | head; echo "SKIP lines: $(grep -c '^SKIP' $OUT/conformance.log)"; tail -n 2 $OUT/conformance.log
el sanitizers
T=$B/linea_cuda_tests
{ timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=*NaN or inf input poisons only what the recurrence poisons (delta*"; echo "memcheck nan pipelines rc $?";
  timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 $T "-tc=*NaN or inf input poisons only what the recurrence poisons (delta*"; echo "racecheck nan pipelines rc $?";
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=CUDA backward: bf16 over 32 chunks*"; echo "memcheck bwd 32 chunks rc $?";
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=cuda gated_delta: chunkwise*" "-sc=CCQ read*"; echo "memcheck ccq chunked rc $?"; } > $OUT/sanitizer.log 2>&1
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases|rc " $OUT/sanitizer.log
el wait-module
wait $BUILD; tail -3 $OUT/python_build.log
el done
