#!/usr/bin/env bash
# kone16's device call: objects built on the workstation (build_local.sh: main 430ab74's instance units and drivers,
# this branch's backward_phases / delta / gated_delta units, backward_test.cu, kone16_ab.cu), carried gzipped in
# objs/ (objs/old/: main's backward_phases unit), linked here. Run from the worktree copy's root.
#   1. timing A/B alone on the GPU: kone16_ab with main's backward_phases ("old") and this branch's ("new"), alternately
#   2. the new test case on main's phases (must fail) and on this branch's; the CUDA backward suite cases
#   3. memcheck (first_chunk_adjoint, chunk_prep16) and racecheck (chunk_prep16) on the new test case
#   4. fuzz: the open cases, and a fresh seed's 0–399
set -u
B=/tmp/kone16; mkdir -p $B/o $B/o/old
export PATH=/usr/local/cuda/bin:$PATH
t0=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - t0 )) s" >> $OUT/build.txt; }
for f in objs/*.o.gz; do gunzip -c $f > $B/o/$(basename $f .gz); done
for f in objs/old/*.o.gz; do gunzip -c $f > $B/o/old/$(basename $f .gz); done
NEWI=$(ls $B/o/*.inst.o); OLDI=$(ls $B/o/*.inst.o | grep -v '/backward_phases.inst.o'); OLDI="$OLDI $B/o/old/backward_phases.inst.o"
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $B/o/kone16_ab.o $NEWI -o $B/ab_new >> $OUT/build.txt 2>&1 &
$L $B/o/kone16_ab.o $OLDI -o $B/ab_old >> $OUT/build.txt 2>&1 &
$L $B/o/backward_test.o $B/o/main.o $NEWI -o $B/t_new >> $OUT/build.txt 2>&1 &
$L $B/o/backward_test.o $B/o/main.o $OLDI -o $B/t_old >> $OUT/build.txt 2>&1 &
$L $B/o/cuda_fuzz.o $NEWI -o $B/fz_new >> $OUT/build.txt 2>&1 &
wait
ls -la $B >> $OUT/build.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $OUT/build.txt 2>&1
el linked
{ for r in 1 2; do echo "-- old $r"; timeout 25 $B/ab_old; echo "-- new $r"; timeout 25 $B/ab_new; done; } > $OUT/ab.txt 2>&1
el timed
TC="*nearly singular chunk transitions*"
( timeout 60 $B/t_old "-tc=$TC" > $B/t_old.log 2>&1; echo "old rc $?" >> $B/t_old.log
  LINEA_BACKWARD_ERRORS=1 timeout 60 $B/t_new "-tc=$TC" > $B/t_newk.log 2>&1; echo "new rc $?" >> $B/t_newk.log ) &
( timeout 100 $B/t_new "-tc=CUDA backward*" > $B/t_suite.log 2>&1; echo "suite rc $?" >> $B/t_suite.log ) &
( timeout 80 compute-sanitizer --tool memcheck --kernel-regex kns=first_chunk_adjoint --error-exitcode 9 $B/t_new "-tc=$TC" > $B/mc1.log 2>&1; echo "memcheck first_chunk_adjoint rc $?" >> $B/mc1.log ) &
( timeout 80 compute-sanitizer --tool memcheck --kernel-regex kns=chunk_prep16 --error-exitcode 9 $B/t_new "-tc=$TC" > $B/mc2.log 2>&1; echo "memcheck chunk_prep16 rc $?" >> $B/mc2.log ) &
( timeout 80 compute-sanitizer --tool racecheck --kernel-regex kns=chunk_prep16 --error-exitcode 9 $B/t_new "-tc=*16-bit phase 1 under beta*" > $B/rc1.log 2>&1; echo "racecheck chunk_prep16 rc $?" >> $B/rc1.log ) &
( for sc in "20261207 1303" "20261207 2639" "20261207 817" "20261215 261" "20261207 418" "20261207 1768" "20261216 337" "20261207 2431" "20261207 212" "20261207 2518"; do
    set -- $sc; timeout 15 $B/fz_new --seed $1 --from $2 --to $(($2 + 1)) | grep '^RESULT' | cut -c1-600; done > $OUT/cases.txt 2>&1
  SEED=20261218 N=400 P=8 BUDGET=55 CASE_TIMEOUT=20 LOG=$B/fz18 bash tests/backend/cuda/fuzz/run_fuzz.sh $B/fz_new > $OUT/fuzz_seed20261218.txt 2>&1 ) &
wait
el checks
{ echo "-- new test on main's phases"; grep -E "ERROR|test cases|assertions|rc " $B/t_old.log | head -40
  echo "-- new test on kone16"; grep -E "ERROR|test cases|assertions|rc |d_initial_state|dbeta|dq " $B/t_newk.log | head -150
  echo "-- suite"; grep -E "ERROR|test cases|assertions|rc " $B/t_suite.log | head -30
  for f in $B/mc1.log $B/mc2.log $B/rc1.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases|rc " $f; done; } > $OUT/tests.txt 2>&1
grep -B2 -A12 "ERROR" $B/t_old.log | head -60 > $OUT/old_failures.txt 2>&1
el done
