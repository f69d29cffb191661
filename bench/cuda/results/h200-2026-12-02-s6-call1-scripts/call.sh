#!/usr/bin/env bash
# Lead's second final call (fifth session of 2026-12-02), trimmed to the device time left: build the CUDA suite,
# conformance runner and bench (sm_90a only) and the fuzz driver; the suite, conformance, a few sanitizer
# selections and the fuzz cases the first call failed, side by side; then the decode bench. Results land in $OUT
# as each step ends.
set -u
cd "$(dirname "$0")"
F=$PWD; R=$(cd ../.. && pwd)
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a $OUT/steps.txt; }
B=/tmp/b; mkdir -p $B/obj; FZ=/tmp/fz; mkdir -p $FZ
FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -I$R/include -I$R/tests -I$R/tools -I$R/.gpu/deps -I$R/.gpu/deps/eigen3"
NCCL=""; for d in /usr/local/cuda/lib /usr/local/cuda/lib64; do [ -e $d/libnccl.so ] && { NCCL="-L$d -Xlinker -rpath=$d -lnccl"; FLAGS="$FLAGS -DLINEA_TEST_NCCL"; break; }; done
el build
{ for s in $R/tests/backend/cuda/instances/*.cu; do echo "I $s"; done
  for s in $R/tests/backend/cuda/*.cu $R/bench/cuda/bench_cuda.cu $R/tools/linea_cuda_conformance.cu $R/tests/backend/cuda/fuzz/cuda_fuzz.cu; do echo "E $s"; done; } |
  xargs -P 24 -L 1 sh -c 'o="$0/obj/$(basename "$2" .cu)$([ "$1" = I ] && echo .inst).o"; d=$([ "$1" = E ] && echo -DLINEA_CUDA_EXTERN_INSTANCES); nvcc '"$FLAGS"' $d -c "$2" -o "$o" > "$o.log" 2>&1 || echo "FAILED: $2"' $B > $OUT/build.txt 2>&1
L="nvcc -gencode=arch=compute_90a,code=sm_90a"; I=$(ls $B/obj/*.inst.o)
T=$B/linea_cuda_tests
O=$(ls $B/obj/*.o | grep -v -E 'inst.o|bench_cuda.o|linea_cuda_conformance.o|cuda_fuzz.o')
$L $O $I $NCCL -o $T >> $OUT/build.txt 2>&1 &
$L $B/obj/linea_cuda_conformance.o $I -o $B/conf >> $OUT/build.txt 2>&1 &
$L $B/obj/bench_cuda.o $I -o $B/bench >> $OUT/build.txt 2>&1 &
$L $B/obj/cuda_fuzz.o $I -o $FZ/cuda_fuzz >> $OUT/build.txt 2>&1 &
wait
ls -la $B/linea_cuda_tests $B/conf $B/bench $FZ/cuda_fuzz >> $OUT/build.txt 2>&1; grep -h -E "error|FAILED" $OUT/build.txt $B/obj/*.log | head -5; tail -4 $OUT/build.txt
el checks
C=$(cd ../conformance && pwd)
( timeout 200 $T > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
( timeout 60 $B/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
i=0
while IFS='|' read -r tool args; do
  [ -z "$tool" ] && continue; i=$((i+1))
  ( eval "timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $T $args" > /tmp/san_$i.log 2>&1; echo "$tool $args rc $?" >> /tmp/san_$i.log ) &
done < $F/sanitize_cases.txt
( for c in 2199 136 1305 1591 2518 2396; do timeout 40 $FZ/cuda_fuzz --seed 20261207 --from $c --to $((c + 1)) 2>&1 | grep '^RESULT' | cut -c1-300; done > $OUT/fuzz_cases.txt 2>&1 ) &
wait
el collect
grep -E "ERROR|FAILED|test cases|assertions|skipped|rc " $OUT/tests.log | head -20
grep -E '^FAIL' $OUT/conformance.log | head; echo "SKIP lines: $(grep -c '^SKIP' $OUT/conformance.log)"; tail -n 3 $OUT/conformance.log
for f in /tmp/san_*.log; do tail -n 1 $f; grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:" $f; done > $OUT/sanitizers.txt; cat $OUT/sanitizers.txt
cat $OUT/fuzz_cases.txt
el bench-decode
timeout 45 $B/bench --decode-variants > $OUT/variants.jsonl 2> /tmp/variants.err; echo "variants rc $?"; python3 $F/show.py $OUT/variants.jsonl '"indices":"permuted"'
el bench-chunk
timeout 40 $B/bench --chunk-only --v128-only > $OUT/bench_chunk.jsonl 2>&1; echo "bench chunk rc $?"; python3 $F/show.py $OUT/bench_chunk.jsonl
el chunk-done
el bench-backward
timeout 90 $B/bench --backward >> $OUT/bench_chunk.jsonl 2>&1; echo "bench backward rc $?"; python3 $F/show.py $OUT/bench_chunk.jsonl bwd_ms
el done2
