#!/usr/bin/env bash
# Lead's final device call (fifth session of 2026-12-02), one call over the merged tree (bwd8, ccqw, norm1, dec6,
# probe): build every CUDA binary on the device (PIC, so the Python module links the instance objects), the fuzz
# driver compiled beside the build; then the checks side by side (CUDA suite, conformance, sanitizers, ccqw's
# failing CCQ-backward cases and CCQ-backward fuzz, a fresh general fuzz run, the module's CUDA pytest); then the
# benchmarks alone on the GPU (chunkwise forward + CCQ, backward, decode through a permuted pool).
set -u
cd "$(dirname "$0")"
F=$PWD; R=$(cd ../.. && pwd)
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for x in nanobind fla_tests wheels; do ln -sfn $R/.gpu/fin6/extra/$x $R/$x; done
FZ=/tmp/fz; mkdir -p $FZ
el build
( cd $R && nvcc -std=c++20 -O2 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 \
   -DLINEA_CUDA_EXTERN_INSTANCES -Iinclude -Itests -I.gpu/deps -I.gpu/deps/eigen3 -c tests/backend/cuda/fuzz/cuda_fuzz.cu -o $FZ/cuda_fuzz.o > $FZ/compile.log 2>&1; echo "fuzz compile rc $?" >> $FZ/compile.log ) &
FZC=$!
(cd $R && DEPS=.gpu/deps GENCODE="-gencode=arch=compute_90a,code=sm_90a -Xcompiler=-fPIC" JOBS=16 \
   timeout 300 bash bench/cuda/build_nvcc.sh build-dev > $OUT/build.log 2>&1; echo "build rc $?" >> $OUT/build.log)
tail -2 $OUT/build.log; grep -E "FAILED|error" $OUT/build.log | head -5
B=$R/build-dev; C=$(cd ../conformance && pwd); T=$B/tests/backend/cuda/linea_cuda_tests
el checks
(cd $R && bash .gpu/fin6/device_build.sh > /tmp/python_build.log 2>&1; echo "module build rc $?" >> /tmp/python_build.log) &
MODB=$!
( timeout 200 $T > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
( timeout 90 $B/tools/linea_cuda_conformance $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
i=0
while IFS='|' read -r tool args; do
  [ -z "$tool" ] && continue
  i=$((i+1))
  ( eval "timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $T $args" > /tmp/san_$i.log 2>&1; echo "$tool $args rc $?" >> /tmp/san_$i.log ) &
done < $F/sanitize_cases.txt
wait $FZC; tail -1 $FZ/compile.log
nvcc -gencode=arch=compute_90a,code=sm_90a $FZ/cuda_fuzz.o $B/obj/*.inst.o -o $FZ/cuda_fuzz > $FZ/link.log 2>&1; echo "fuzz link rc $?"
if [ -x $FZ/cuda_fuzz ]; then
  for i in 770 822 1041 1256 1680 2054 2717 77 212; do timeout 40 $FZ/cuda_fuzz --seed 20261206 --from $i --to $((i + 1)) > $FZ/k$i.log 2>&1 & done
  for i in 2735 4117; do timeout 40 $FZ/cuda_fuzz --seed 20261204 --from $i --to $((i + 1)) > $FZ/k$i.log 2>&1 & done
  wait $(jobs -p | tail -11) 2>/dev/null
  for s in 20261206 20261204; do
    ( SEED=$s N=4200 P=3 BUDGET=35 CASE_TIMEOUT=20 LOG=$FZ/ccq$s timeout 60 bash $R/tests/backend/cuda/fuzz/run_fuzz.sh $FZ/cuda_fuzz --form backward --read ccq > $FZ/ccqfuzz_$s.log 2>&1 ) &
  done
  ( SEED=20261207 N=3000 P=4 BUDGET=55 CASE_TIMEOUT=20 LOG=$FZ/log timeout 90 bash $R/tests/backend/cuda/fuzz/run_fuzz.sh $FZ/cuda_fuzz > /tmp/fuzz.log 2>&1; echo "fuzz rc $?" >> /tmp/fuzz.log ) &
fi
wait $MODB; tail -2 /tmp/python_build.log
( cd $R && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site wheels/*.whl > /tmp/pip.log 2>&1;
  PYTHONPATH=$R/python:/tmp/site LINEA_CONFORMANCE_DIR=$C timeout 150 python3 -m pytest -q python/tests/test_cuda.py > /tmp/pytest_cuda.log 2>&1; echo "pytest cuda rc $?" >> /tmp/pytest_cuda.log ) &
wait
el collect
grep -E "ERROR|FAILED|test cases|assertions|skipped|rc " $OUT/tests.log | head -30
grep -E '^FAIL' $OUT/conformance.log | head; echo "SKIP lines: $(grep -c '^SKIP' $OUT/conformance.log)"; echo "backward lines: $(grep -ci 'backward' $OUT/conformance.log)"; tail -n 3 $OUT/conformance.log
for f in /tmp/san_*.log; do tail -n 1 $f; grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:" $f; done > $OUT/sanitizers.txt; cat $OUT/sanitizers.txt
{ echo "== ccqw's issue cases"; cat $FZ/k*.log 2>/dev/null | grep '^RESULT' | cut -c1-260
  for s in 20261206 20261204; do echo "== CCQ backward fuzz seed $s"; grep -E "^== seed|total" $FZ/ccqfuzz_$s.log; grep 'RESULT [-0-9]* FAIL' $FZ/ccqfuzz_$s.log | cut -c1-260 | head; done; } > $OUT/ccqw.txt 2>&1
cat $OUT/ccqw.txt | head -40
cp /tmp/fuzz.log $OUT/fuzz.log 2>/dev/null; sed -n '/== per (rule/,$p' /tmp/fuzz.log | head -60; grep -E "^== seed|fuzz rc" /tmp/fuzz.log; echo "fuzz failures: $(grep -c 'RESULT [-0-9]* FAIL' /tmp/fuzz.log)"; grep 'RESULT [-0-9]* FAIL' /tmp/fuzz.log | cut -c1-300 | head -20
tail -n 4 /tmp/pytest_cuda.log; cp /tmp/pytest_cuda.log $OUT/ 2>/dev/null
el bench-chunk
timeout 60 $B/bench/cuda/linea_cuda_bench --chunk-only --v128-only > $OUT/bench_chunk.jsonl 2>&1; echo "bench chunk rc $?"
python3 $F/show.py $OUT/bench_chunk.jsonl
el bench-backward
timeout 90 $B/bench/cuda/linea_cuda_bench --backward > $OUT/backward.jsonl 2>&1; echo "bench backward rc $?"; python3 $F/show.py $OUT/backward.jsonl
el bench-decode
timeout 60 $B/bench/cuda/linea_cuda_bench --decode-variants > $OUT/variants.jsonl 2> /tmp/variants.err; echo "variants rc $?"; python3 $F/show.py $OUT/variants.jsonl '"indices":"permuted"'
el done
