#!/usr/bin/env bash
# Lead's final device call 1 (session 3 of 2026-12-02): build every CUDA binary on the device (16 cores, PIC so the
# Python module can link the instance objects), the CUDA suite, conformance, sanitizers, the module build.
set -u
cd "$(dirname "$0")"
F=$PWD; R=$(cd ../.. && pwd)
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.mem --format=csv,noheader
for x in nanobind fla_tests wheels; do ln -sfn $F/extra/$x $R/$x; done
el build
(cd $R && DEPS=.gpu/deps GENCODE="-gencode=arch=compute_90a,code=sm_90a -Xcompiler=-fPIC" JOBS=16 \
   timeout 300 bash bench/cuda/build_nvcc.sh build-dev > $OUT/build.log 2>&1; echo "build rc $?" >> $OUT/build.log)
tail -3 $OUT/build.log; grep -c FAILED $OUT/build.log
B=$R/build-dev; C=$(cd ../conformance && pwd)
el module-bg
(cd $R && bash $F/device_build.sh > $OUT/python_build.log 2>&1; echo "module build rc $? at $(( $(date +%s) - START )) s" >> $OUT/python_build.log) &
BUILD=$!
el tests+sanitizers
T=$B/tests/backend/cuda/linea_cuda_tests
( timeout 200 $T > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
( timeout 60 $B/tools/linea_cuda_conformance $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
i=0
while IFS='|' read -r tool args; do
  [ -z "$tool" ] && continue
  i=$((i+1))
  ( eval "timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $T $args" > $OUT/san_$i.log 2>&1; echo "$tool $args rc $?" >> $OUT/san_$i.log ) &
done < ${SAN_CASES:-$F/sanitize_cases.txt}
wait_jobs() { for j in $(jobs -p); do [ "$j" = "$BUILD" ] || wait $j; done; }
wait_jobs
el collect
grep -E "ERROR|FAILED|test cases|assertions|skipped|rc " $OUT/tests.log | head -40
grep -E '^FAIL' $OUT/conformance.log | head; echo "SKIP lines: $(grep -c '^SKIP' $OUT/conformance.log)"; tail -n 3 $OUT/conformance.log
for f in $OUT/san_*.log; do tail -n 1 $f; grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:" $f; done
el wait-module
wait $BUILD; tail -3 $OUT/python_build.log
el done
