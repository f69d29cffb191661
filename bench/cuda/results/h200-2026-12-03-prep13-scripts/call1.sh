#!/usr/bin/env bash
# prep13 call 1 (H200): build on the device, check, time. Carry .gpu/prep13 (include, tests, tools, bench/cuda of
# branch prep13) and .gpu/deps:   LIMIT=280 bash .gpu/prep13/bench/cuda/results/h200-2026-12-03-prep13-scripts/call1.sh
#  build (16 cores, in parallel): grad_ab for gated_delta and delta (standalone), the 7 instance units, main.cu +
#    backward_test.cu (extern instances) -> tests
#  as soon as grad_ab is built: --check distances (small odd shapes, extreme gates), then the timings alone on the GPU
#    (GRAD_AB_PREP16=1 --long: 8x4096 and 1x32768, bf16), then memcheck + racecheck (chunk_prep16) of --check
#  when the suite is built: LINEA_BACKWARD_ERRORS=1 "CUDA backward*" cases; memcheck of the new 16-bit case
#  then, if time is left, the timings again with the CPU idle
set -u
export PATH=/usr/local/cuda/bin:$PATH
R=$PWD/.gpu/prep13; D=$PWD/.gpu/deps; B=/tmp/b; mkdir -p $B/obj
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s" >> $OUT/steps.txt; }
left() { echo $(( ${LIMIT:-280} - ($(date +%s) - S) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/steps.txt
FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
el build
AB=(); BUILD=()
for r in gated_delta delta; do
  (timeout 200 nvcc $FLAGS -DGRAD_AB_RULE=linea::$r $R/bench/cuda/grad_ab.cu -o $B/ab_$r > $B/build_ab_$r.log 2>&1; echo "ab_$r rc $?" >> $B/build_ab_$r.log) &
  AB+=($!)
done
for s in $R/tests/backend/cuda/instances/*.cu; do
  (timeout 230 nvcc $FLAGS -c $s -o $B/obj/$(basename $s .cu).inst.o > $B/build_$(basename $s .cu).log 2>&1; echo "$(basename $s) rc $?" >> $B/build_$(basename $s .cu).log) &
  BUILD+=($!)
done
for s in main backward_test; do
  (timeout 230 nvcc $FLAGS -DLINEA_CUDA_EXTERN_INSTANCES -c $R/tests/backend/cuda/$s.cu -o $B/obj/$s.o > $B/build_$s.log 2>&1; echo "$s rc $?" >> $B/build_$s.log) &
  BUILD+=($!)
done
wait ${AB[@]}
el "grad_ab built"
cat $B/build_ab_*.log > $OUT/build.log
for r in gated_delta delta; do timeout 40 $B/ab_$r --check >> $OUT/check.jsonl 2>&1 || echo "check $r rc $?" >> $OUT/check.jsonl; done
el "check done"
for r in gated_delta delta; do [ $(left) -gt 90 ] && { GRAD_AB_PREP16=1 timeout 45 $B/ab_$r --long >> $OUT/ab.jsonl 2>&1 || echo "ab $r rc $?" >> $OUT/ab.jsonl; }; done
el "timing done"
( for r in gated_delta delta; do
    timeout 70 compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_$r --check > $B/mc_$r.log 2>&1; echo "memcheck ab_$r --check rc $?" >> $B/mc_$r.log
    timeout 90 compute-sanitizer --tool racecheck --kernel-regex kns=chunk_prep16 --error-exitcode 9 $B/ab_$r --check > $B/rc_$r.log 2>&1; echo "racecheck(chunk_prep16) ab_$r --check rc $?" >> $B/rc_$r.log
  done ) &
SAN=$!
wait ${BUILD[@]}
el "builds done"
cat $B/build_*.log | grep -v "^$" | grep -E "rc |error|spill" >> $OUT/build.log
ls $B/obj >> $OUT/build.log
if nvcc -gencode=arch=compute_90a,code=sm_90a $B/obj/main.o $B/obj/backward_test.o $B/obj/*.inst.o -o $B/tests >> $OUT/build.log 2>&1; then
  el "tests linked"
  (LINEA_BACKWARD_ERRORS=1 timeout $(( $(left) - 15 )) $B/tests "-tc=CUDA backward*" > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log) &
  (timeout $(( $(left) - 15 )) compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests "-tc=CUDA backward: 16-bit phase 1*" > $B/mc_tests.log 2>&1; echo "memcheck tests 16-bit phase 1 rc $?" >> $B/mc_tests.log) &
fi
wait
el "checks done"
{ for f in $B/mc_*.log $B/rc_*.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|rc [0-9]" $f; grep -h -m5 -E "Invalid|Race|Hazard|error" $f; done; } > $OUT/san.txt 2>&1
[ $(left) -gt 30 ] && { GRAD_AB_PREP16=1 timeout $(( $(left) - 5 )) $B/ab_gated_delta --long > $OUT/ab2.jsonl 2>&1; }
el done
cat $OUT/steps.txt; tail -n 3 $OUT/tests.log; cat $OUT/san.txt | cut -c1-300 | head -20
grep -o '"rule[^,]*,"B[^,]*,"T[^,]*,.\{0,40\}extreme":[01]\|"prep_vs_v0p[^}]*}\|"lib_vs_v0p[^}]*}\|"prep16_ms[^}]*' $OUT/check.jsonl $OUT/ab.jsonl | cut -c1-400
