#!/usr/bin/env bash
# Lead's final device call (fourth session of 2026-12-02), one call over the merged tree: build every CUDA binary
# on the device (PIC, so the Python module links the instance objects) and the fuzz driver; then the checks side by
# side (CUDA suite, conformance, sanitizers, a fresh fuzz run, the module's CUDA pytest); then the benchmarks alone
# on the GPU (chunkwise forward + CCQ, backward, long sequences, decode through a permuted pool).
set -u
cd "$(dirname "$0")"
F=$PWD; R=$(cd ../.. && pwd)
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for x in nanobind fla_tests wheels; do ln -sfn $F/extra/$x $R/$x; done
el build
(cd $R && DEPS=.gpu/deps GENCODE="-gencode=arch=compute_90a,code=sm_90a -Xcompiler=-fPIC" JOBS=16 \
   timeout 300 bash bench/cuda/build_nvcc.sh build-dev > $OUT/build.log 2>&1; echo "build rc $?" >> $OUT/build.log)
tail -2 $OUT/build.log; grep -E "FAILED|error" $OUT/build.log | head -5
B=$R/build-dev; C=$(cd ../conformance && pwd); T=$B/tests/backend/cuda/linea_cuda_tests
el fuzz-build+module-bg
(mkdir -p /tmp/fz && nvcc -gencode=arch=compute_90a,code=sm_90a $F/fz/cuda_fuzz.o $B/obj/*.inst.o -o /tmp/fz/cuda_fuzz > /tmp/fuzz_build.log 2>&1; echo "fuzz link rc $? (cuda_fuzz.o compiled on the lead machine from the same tree)" >> /tmp/fuzz_build.log) &
FUZZB=$!
(cd $R && bash $F/device_build.sh > /tmp/python_build.log 2>&1; echo "module build rc $?" >> /tmp/python_build.log) &
MODB=$!
el checks
( timeout 220 $T > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
( timeout 60 $B/tools/linea_cuda_conformance $C/fla $C/linea > /tmp/conformance.log 2>&1; echo "conf rc $?" >> /tmp/conformance.log ) &
i=0
while IFS='|' read -r tool args; do
  [ -z "$tool" ] && continue
  i=$((i+1))
  ( eval "timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $T $args" > /tmp/san_$i.log 2>&1; echo "$tool $args rc $?" >> /tmp/san_$i.log ) &
done < $F/sanitize_cases.txt
wait $FUZZB; tail -2 /tmp/fuzz_build.log
( [ -x /tmp/fz/cuda_fuzz ] && SEED=20261206 N=3000 P=6 BUDGET=60 CASE_TIMEOUT=20 LOG=/tmp/fz/log timeout 100 bash $R/tests/backend/cuda/fuzz/run_fuzz.sh /tmp/fz/cuda_fuzz > /tmp/fuzz.log 2>&1; echo "fuzz rc $?" >> /tmp/fuzz.log ) &
wait $MODB; tail -2 /tmp/python_build.log
el python-cuda-tests
( cd $R && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site wheels/*.whl > /tmp/pip.log 2>&1;
  PYTHONPATH=$R/python:/tmp/site LINEA_CONFORMANCE_DIR=$C timeout 150 python3 -m pytest -q -x python/tests/test_cuda.py > /tmp/pytest_cuda.log 2>&1; echo "pytest cuda rc $?" >> /tmp/pytest_cuda.log ) &
wait
el collect
grep -E "ERROR|FAILED|test cases|assertions|skipped|rc " $OUT/tests.log | head -40
grep -E '^FAIL' /tmp/conformance.log | head; echo "SKIP lines: $(grep -c '^SKIP' /tmp/conformance.log)"; tail -n 3 /tmp/conformance.log
for f in /tmp/san_*.log; do tail -n 1 $f; grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:" $f; done > $OUT/sanitizers.txt; cat $OUT/sanitizers.txt
cp /tmp/fuzz.log $OUT/fuzz.log 2>/dev/null; sed -n '/== per (rule/,$p' /tmp/fuzz.log | head -70; grep -E "^== seed|fuzz rc" /tmp/fuzz.log; echo "fuzz failures: $(grep -c 'RESULT [-0-9]* FAIL' /tmp/fuzz.log)"; grep 'RESULT [-0-9]* FAIL' /tmp/fuzz.log | cut -c1-300 | head -25
tail -n 4 /tmp/pytest_cuda.log
el bench-chunk
timeout 60 $B/bench/cuda/linea_cuda_bench --chunk-only --v128-only > $OUT/bench_chunk.jsonl 2>&1; echo "bench chunk rc $?"
python3 $F/show.py $OUT/bench_chunk.jsonl
el bench-backward
timeout 90 $B/bench/cuda/linea_cuda_bench --backward > $OUT/backward.jsonl 2>&1; echo "bench backward rc $?"; python3 $F/show.py $OUT/backward.jsonl
el bench-long
timeout 70 $B/bench/cuda/linea_segments_bench --long > $OUT/segments_long.jsonl 2>&1; echo "segments long rc $?"; python3 $F/show.py $OUT/segments_long.jsonl | head -40
el bench-decode
timeout 60 $B/bench/cuda/linea_cuda_bench --decode-variants > /tmp/variants.jsonl 2> /tmp/variants.err; echo "variants rc $?"; cp /tmp/variants.jsonl $OUT/ ; python3 $F/show.py /tmp/variants.jsonl '"indices":"permuted"'
el done
