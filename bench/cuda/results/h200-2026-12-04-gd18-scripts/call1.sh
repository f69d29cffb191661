#!/usr/bin/env bash
# gd18's device call (one): objects built on the workstation (build.sh, pack.sh), linked here.
#   1. cg16_ab --long: chunk_grad16 v0 (main 5386113) against the library's and each option off, distances + timings,
#      gated_delta and delta, 8×4096 and 1×32768 (alone on the GPU)
#   2. side by side: the trimmed 16-bit suite; memcheck (kernels chunk_*) of cg16_ab --check; memcheck (all kernels)
#      and racecheck (chunk_grad16, chunk_prep16) of the suite's gd18 case
#   (between 1 and 2, alone: ncu --set full of one launch each of v0 and the library's chunk_grad16, 8×4096 gated_delta)
set -u
B=/tmp/gd18; mkdir -p $B/o
export PATH=/usr/local/cuda/bin:$PATH
t0=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - t0 )) s" >> $OUT/log.txt; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $OUT/log.txt 2>&1
for f in objs/*.o.xz; do xz -dc $f > $B/o/$(basename $f .xz) & done; wait
I="$B/o/backward_phases.inst.o $B/o/delta.inst.o $B/o/gated_delta.inst.o"
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $B/o/cg16_ab.o $I -o $B/ab >> $OUT/log.txt 2>&1 &
$L $B/o/gd18_backward16_test.o $B/o/main.o $I -o $B/t18 >> $OUT/log.txt 2>&1 &
wait
el linked
timeout 60 $B/ab --long > $OUT/ab_time.jsonl 2>&1; echo "ab rc $?" >> $OUT/log.txt
el timed
timeout 100 ncu --set full -k regex:chunk_grad16 -c 2 $B/ab --once > $B/ncu.log 2>&1; echo "ncu rc $?" >> $B/ncu.log
el ncu
( timeout 90 $B/t18 > $B/t18.log 2>&1; echo "suite rc $?" >> $B/t18.log ) &
( timeout 90 compute-sanitizer --tool memcheck --kernel-regex kns=chunk_ --error-exitcode 9 $B/ab --check > $B/mc1.log 2>&1; echo "memcheck ab --check rc $?" >> $B/mc1.log ) &
( timeout 90 compute-sanitizer --tool racecheck --kernel-regex kns=chunk_prep16 --error-exitcode 9 $B/t18 "-tc=CUDA backward: gd18*" > $B/rc1.log 2>&1; echo "racecheck (prep16) suite gd18 case rc $?" >> $B/rc1.log ) &
( timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $B/t18 "-tc=CUDA backward: gd18*" > $B/mc2.log 2>&1; echo "memcheck suite gd18 case rc $?" >> $B/mc2.log ) &
( timeout 90 compute-sanitizer --tool racecheck --kernel-regex kns=chunk_grad16 --error-exitcode 9 $B/t18 "-tc=CUDA backward: gd18*" > $B/rc2.log 2>&1; echo "racecheck suite gd18 case rc $?" >> $B/rc2.log ) &
wait
el checks
grep -E "ERROR|FAILED|test cases|assertions|rc " $B/t18.log | head -40 > $OUT/tests.txt
for f in mc1 rc1 mc2 rc2; do { echo "--- $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rc |Invalid|Race|hazard" $B/$f.log | head -12; grep '"rule"' $B/$f.log | cut -c1-2500 | head -16; } >> $OUT/sanitizers.txt; done
cp $B/ncu.log $OUT/ncu_details.txt
el done
