#!/usr/bin/env bash
# acc9's device call (2026-12-02, sixth session; issue #14's accuracy items). Carried: .gpu/acc9/src (the branch's
# tree), .gpu/acc9/obj (objects built off-device from that tree: the suite's main + backward_test, the conformance
# runner, the fuzz driver, the instance parts (forms / backward / CCQ backward per rule), gzip-compressed), .gpu/deps,
# .gpu/conformance. On the device: any part not built off-device compiles (-P 16), the binaries link, then the suite's
# `CUDA backward*` cases, conformance, the issue's fuzz cases, a backward fuzz sweep and memcheck run side by side.
set -u
G=$PWD/.gpu; S=$G/acc9/src; D=$G/deps; C=$G/conformance
export PATH=/usr/local/cuda/bin:$PATH
B=/tmp/a9; mkdir -p $B/obj
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a $OUT/steps.txt; }
FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -I$S/include -I$S/tests -I$S/tools -I$D -I$D/eigen3"
el build
( for f in $G/acc9/obj/*.gz; do gzip -dc "$f" > $B/obj/$(basename "$f" .gz); done ) &
PARTS=$S/bench/cuda/results/h200-2026-12-02-s6-acc9-scripts/parts  # (an instance part not built off-device builds here)
{ for p in $PARTS/*.cu; do [ -e $G/acc9/obj/$(basename $p .cu).inst.o.gz ] || echo "I $p"; done
  [ -e $G/acc9/obj/cuda_fuzz.o.gz ] || echo "E $S/tests/backend/cuda/fuzz/cuda_fuzz.cu"; } |
  timeout 130 xargs -r -P 16 -L 1 sh -c 'o="$0/obj/$(basename "$2" .cu)$([ "$1" = I ] && echo .inst).o"; d=$([ "$1" = E ] && echo -DLINEA_CUDA_EXTERN_INSTANCES); nvcc '"$FLAGS"' $d -c "$2" -o "$o" > "$o.log" 2>&1 || echo "FAILED: $2"' $B > $OUT/build.txt 2>&1
wait
el link
L="nvcc -gencode=arch=compute_90a,code=sm_90a"; I=$(ls $B/obj/*.inst.o)
$L $B/obj/main.o $B/obj/backward_test.o $I -o $B/tests >> $OUT/build.txt 2>&1 &
$L $B/obj/linea_cuda_conformance.o $I -o $B/conf >> $OUT/build.txt 2>&1 &
$L $B/obj/cuda_fuzz.o $I -o $B/cuda_fuzz >> $OUT/build.txt 2>&1 &
wait
ls -la $B/tests $B/conf $B/cuda_fuzz >> $OUT/build.txt 2>&1; grep -h -E "error|FAILED" $OUT/build.txt $B/obj/*.log | head -5
el checks
( timeout 45 $B/tests -tc="CUDA backward*" > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
( timeout 35 $B/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
( for c in 2518 1856 2199 136 1305 1591 2396 282 379 418 1303 1768; do timeout 20 $B/cuda_fuzz --seed 20261207 --from $c --to $((c + 1)) 2>&1 | grep '^RESULT' | cut -c1-300; done > $OUT/fuzz_cases.txt 2>&1
  for c in 77 770 212; do timeout 15 $B/cuda_fuzz --seed 20261206 --from $c --to $((c + 1)) 2>&1 | grep '^RESULT' | cut -c1-300; done >> $OUT/fuzz_cases.txt 2>&1 ) &
( SEED=20261207 N=3000 P=4 BUDGET=25 CASE_TIMEOUT=15 LOG=/tmp/fzb timeout 40 bash $S/tests/backend/cuda/fuzz/run_fuzz.sh $B/cuda_fuzz --form backward > /tmp/fuzz_sweep.log 2>&1 ) &
( timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests -tc="*one- and two-token*" > /tmp/san1.log 2>&1; echo "memcheck one- and two-token rc $?" >> /tmp/san1.log ) &
( timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests -tc="CUDA backward: in-kernel options*" > /tmp/san2.log 2>&1; echo "memcheck in-kernel options rc $?" >> /tmp/san2.log ) &
wait
el collect
{ tail -n 1 /tmp/san1.log; grep -h -E "ERROR SUMMARY|test cases:" /tmp/san1.log; tail -n 1 /tmp/san2.log; grep -h -E "ERROR SUMMARY|test cases:" /tmp/san2.log; } > $OUT/sanitizers.txt
grep -E "^== seed|total:|RESULT [-0-9]* FAIL" /tmp/fuzz_sweep.log | cut -c1-300 > $OUT/fuzz_sweep.txt; grep -E "^ *[a-z_]+ +backward" /tmp/fuzz_sweep.log >> $OUT/fuzz_sweep.txt
grep -E "ERROR|err :=|gradient :=|test cases|assertions|rc " $OUT/tests.log | head -30
grep -E '^FAIL' $OUT/conformance.log | head; tail -n 3 $OUT/conformance.log
cat $OUT/sanitizers.txt $OUT/fuzz_cases.txt; tail -n 25 $OUT/fuzz_sweep.txt
el done
