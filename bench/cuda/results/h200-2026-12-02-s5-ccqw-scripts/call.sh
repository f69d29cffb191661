#!/usr/bin/env bash
# ccqw's H200 call (2026-12-02, fifth session): the CCQ backward with centred statistics. Run from the repository
# root with .gpu/ccqw (this branch's tree, objects/ compiled on the lead machine with extern instances, old_include/
# = main a8e5b3d's include/), .gpu/deps carried:  LIMIT=150 bash .gpu/ccqw/bench/cuda/results/h200-2026-12-02-s5-ccqw-scripts/call.sh
# 1. builds on the device, 16 jobs: the instances split in three TUs per rule (forms, identity backward, CCQ
#    backward: shorter TUs in parallel) and the timing program against main's headers (the "before");
# 2. times the CCQ backward before/after (GPU alone); 3. the CUDA suite's CCQ backward cases and the fuzz driver's
#    CCQ backward cases of seeds 20261206 and 20261204 (where issue #14's failures were found) side by side;
# 4. compute-sanitizer memcheck / racecheck over a few small CCQ backward fuzz cases.
# Its one run (2026-12-02) hit the 140 s limit inside the build (22 TUs on 16 cores) and, its output piped through
# `tail`, returned nothing: the script now writes its log under $OUT as it goes (a killed call still returns $OUT).
# On a device call, prefer lead_check.sh over a tree built by build_nvcc.sh.
OUT=${OUT:-/tmp/cw_out}; mkdir -p $OUT; exec > >(tee -a $OUT/call.log) 2>&1
set -x
R=$(pwd)/.gpu/ccqw; D=$(pwd)/.gpu/deps; B=/tmp/cw; mkdir -p $B/obj $B/src
start=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - start )) s"; }
G="-gencode=arch=compute_90a,code=sm_90a"
COMMON="-std=c++20 -O3 -DNDEBUG $G --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186"
F="$COMMON -I$R/include -I$R/tests -I$D -I$D/eigen3"
FOLD="$COMMON -I$R/old_include -I$R/tests -I$D -I$D/eigen3"
for r in additive simple_gla gla delta gated_delta kda gdn2; do
  printf '#include <linea/cuda.hpp>\nLINEA_CUDA_INSTANCES(, linea::%s)\n' $r > $B/src/fwd_$r.cu
  printf '#include <linea/cuda.hpp>\nLINEA_CUDA_BACKWARD_INSTANCES(, linea::%s, linea::read::identity)\n' $r > $B/src/bwd_$r.cu
  printf '#include <linea/cuda.hpp>\nLINEA_CUDA_CCQ_BACKWARD_INSTANCES(, linea::%s)\n' $r > $B/src/ccq_$r.cu
done
( nvcc $FOLD -c $R/bench/cuda/results/h200-2026-12-02-s5-ccqw-scripts/ccq_backward_time.cu -o $B/obj/time_old.o > $B/time_old.log 2>&1 \
  && nvcc $G $B/obj/time_old.o -o $B/time_old >> $B/time_old.log 2>&1 ) &
OLD=$!
ls $B/src/*.cu | xargs -P 16 -I{} sh -c "nvcc $F -c {} -o $B/obj/\$(basename {} .cu).o || echo FAILED {}"
el "instances built"
INST="$B/obj/fwd_*.o $B/obj/bwd_*.o $B/obj/ccq_*.o"
O=$R/objects
nvcc $G $O/backward_test.o $O/main.o $INST -o $B/tests || echo "FAILED tests link"
nvcc $G $O/cuda_fuzz.o $INST -o $B/cuda_fuzz || echo "FAILED fuzz link"
nvcc $G $O/ccq_backward_time.o $INST -o $B/time_new || echo "FAILED time link"
wait $OLD; tail -3 $B/time_old.log
el "linked"
echo "== timing (before = main's headers, after = this branch)"
[ -x $B/time_old ] && timeout 40 $B/time_old | sed 's/^/before /'
timeout 40 $B/time_new | sed 's/^/after  /'
el "timed"
echo "== issue #14's failing cases re-run (seed 20261206: 770 822 1041 1256 1680 2054 2717 77 212; seed 20261204: 2735 4117)"
for i in 770 822 1041 1256 1680 2054 2717 77 212; do timeout 30 $B/cuda_fuzz --seed 20261206 --from $i --to $((i + 1)) > $B/known_a$i.log 2>&1 & done
for i in 2735 4117; do timeout 30 $B/cuda_fuzz --seed 20261204 --from $i --to $((i + 1)) > $B/known_b$i.log 2>&1 & done
wait
cat $B/known_*.log | grep '^RESULT' | cut -c1-300 | tee $B/known.log
el "known cases"
( timeout 60 $B/tests -tc='*CCQ*,*gdn2*' > $B/tests.log 2>&1; echo "tests rc $?" >> $B/tests.log ) &
TESTS=$!
for s in 20261206 20261204; do
  SEED=$s N=4200 P=7 BUDGET=${FUZZ_BUDGET:-30} CASE_TIMEOUT=20 LOG=$B/fz$s timeout 60 bash $R/tests/backend/cuda/fuzz/run_fuzz.sh $B/cuda_fuzz --form backward --read ccq > $B/fuzz_$s.log 2>&1 &
done
wait
el "fuzz and tests done"
grep -E "test cases|assertions|tests rc|ERROR|err :=|gradient :=" $B/tests.log | head -40
for s in 20261206 20261204; do echo "== fuzz seed $s"; grep -E "^== seed|total:" $B/fuzz_$s.log; grep 'RESULT [-0-9]* FAIL' $B/fuzz_$s.log | cut -c1-300 | head -20; sed -n '/== per (rule/,$p' $B/fuzz_$s.log | head -20; done
if [ $(( $(date +%s) - start )) -lt ${LIMIT:-150} ]; then
  ( timeout 20 compute-sanitizer --tool memcheck --print-limit 5 $B/cuda_fuzz --seed 20261206 --from 0 --to 800 --form backward --read ccq --max-work 300000 --budget 12 2>&1 | grep -E "RESULT|ERROR SUMMARY|Invalid" | cut -c1-160 | tail -12 ) || true
  ( timeout 15 compute-sanitizer --tool racecheck --print-limit 5 $B/cuda_fuzz --seed 20261204 --from 0 --to 800 --form backward --read ccq --max-work 100000 --budget 6 2>&1 | grep -E "RESULT|ERROR SUMMARY|hazard" | cut -c1-160 | tail -8 ) || true
fi
el "end"
mkdir -p $OUT; cp $B/tests.log $B/known.log $OUT/ 2>/dev/null; for s in 20261206 20261204; do cp $B/fuzz_$s.log $OUT/; xz -c $B/fz$s.all > $OUT/fz$s.all.xz; done
