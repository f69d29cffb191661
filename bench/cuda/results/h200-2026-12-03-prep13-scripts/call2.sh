#!/usr/bin/env bash
# prep13 call 2 (prepared, NOT run: no device time left): the branch's final library (16-bit phase 1, state passes
# at 3xTF32 as main) — what call 1 did not cover. Carry .gpu/prep13 (include, tests, tools, bench/cuda) and .gpu/deps:
#   LIMIT=240 bash .gpu/prep13/bench/cuda/results/h200-2026-12-03-prep13-scripts/call2.sh
#  1. grad_ab for gated_delta, delta, simple_gla, additive (standalone) and the backward suite, built in parallel
#  2. racecheck + memcheck of the additive-family variant (simple_gla, additive --check: chunk_prep16_kernel<false>)
#  3. timings alone: GRAD_AB_PREP16=1 --long, every scalar rule (phase 1 main vs prep13, whole backward both ways)
#  4. LINEA_BACKWARD_ERRORS=1 "CUDA backward*" (the final combination's errors)
set -u
export PATH=/usr/local/cuda/bin:$PATH
R=$PWD/.gpu/prep13; D=$PWD/.gpu/deps; B=/tmp/b; mkdir -p $B/obj
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s" >> $OUT/steps.txt; }
left() { echo $(( ${LIMIT:-240} - ($(date +%s) - S) )); }
FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
AB=(); BUILD=()
for r in gated_delta delta simple_gla additive; do
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
for r in simple_gla additive; do
  timeout 60 compute-sanitizer --tool racecheck --kernel-regex kns=chunk_prep16 --error-exitcode 9 $B/ab_$r --check > $B/rc_$r.log 2>&1; echo "racecheck(chunk_prep16) ab_$r --check rc $?" >> $B/rc_$r.log
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_$r --check > $B/mc_$r.log 2>&1; echo "memcheck ab_$r --check rc $?" >> $B/mc_$r.log
done
{ for f in $B/rc_*.log $B/mc_*.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|rc [0-9]" $f; done; grep -h '^{' $B/mc_*.log | cut -c1-600; } > $OUT/san.txt
el sanitizers
wait ${BUILD[@]}
el "builds done"
for r in gated_delta delta simple_gla additive; do
  [ $(left) -gt 60 ] && { GRAD_AB_PREP16=1 timeout 40 $B/ab_$r --long >> $OUT/ab.jsonl 2>&1 || echo "ab $r rc $?" >> $OUT/ab.jsonl; }
done
el timing
if nvcc -gencode=arch=compute_90a,code=sm_90a $B/obj/main.o $B/obj/backward_test.o $B/obj/*.inst.o -o $B/tests > $OUT/link.log 2>&1; then
  LINEA_BACKWARD_ERRORS=1 timeout $(( $(left) - 5 )) $B/tests "-tc=CUDA backward*" > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log
fi
el done
cat $OUT/steps.txt $OUT/san.txt | cut -c1-300; tail -n 3 $OUT/tests.log
grep -o '"rule[^,]*\|"prep16_ms[^}]*' $OUT/ab.jsonl
