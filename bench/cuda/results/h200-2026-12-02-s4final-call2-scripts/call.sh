#!/usr/bin/env bash
# Lead's second device call (fourth session of 2026-12-02), over the final tree (the cut-margin change included):
# build on the device; conformance (the merged tree's count, lost from the first call's output); the segmented
# forward's CUDA cases and its long-sequence rows (the new automatic choice at 2×16384); fuzz1's open cases re-run
# with its fixed driver (its own binary, linked against the session-3 instance library) while the build runs.
set -u
cd "$(dirname "$0")"
F=$PWD; R=$(cd ../.. && pwd)
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
( cd $R/.gpu/fuzz1 && timeout 60 bash bench/cuda/results/h200-2026-12-02-s4-fuzz1/rerun_open.sh > /tmp/rerun_open.log 2>&1; echo "rerun rc $?" >> /tmp/rerun_open.log ) &
RERUN=$!
el build
(cd $R && DEPS=.gpu/deps GENCODE="-gencode=arch=compute_90a,code=sm_90a" JOBS=16 \
   timeout 300 bash bench/cuda/build_nvcc.sh build-dev > /tmp/build.log 2>&1; echo "build rc $?" >> /tmp/build.log)
tail -2 /tmp/build.log; grep -E "FAILED|error" /tmp/build.log | head -5
B=$R/build-dev; C=$(cd ../conformance && pwd); T=$B/tests/backend/cuda/linea_cuda_tests
wait $RERUN; cp /tmp/rerun_open.log $OUT/; echo "== fuzz1's open cases"; cut -c1-330 /tmp/rerun_open.log
el checks
( timeout 90 $B/tools/linea_cuda_conformance $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
( timeout 120 $T "-tc=*segment*,*context parallel*" > $OUT/segments_tests.log 2>&1; echo "tests rc $?" >> $OUT/segments_tests.log ) &
wait
el collect
grep -E '^FAIL' $OUT/conformance.log | head; echo "SKIP lines: $(grep -c '^SKIP' $OUT/conformance.log)"; tail -n 4 $OUT/conformance.log
grep -E "ERROR|FAILED|test cases|assertions|rc " $OUT/segments_tests.log | head
el bench-long
timeout 70 $B/bench/cuda/linea_segments_bench --long > $OUT/segments_long.jsonl 2>&1; echo "segments long rc $?"
python3 $F/show.py $OUT/segments_long.jsonl > /tmp/long.txt; grep -E "2x16384|1x32768" /tmp/long.txt | cut -c1-140
el done
