#!/usr/bin/env bash
# st17's device call: objects built on the workstation (build_local.sh: this branch's backward_phases, delta and
# gated_delta units, the trimmed 16-bit suite st17_backward16_test.cu + main.cu, grad_ab for gated_delta and delta),
# carried xz'd in objs/, linked here. Run from the worktree copy's root (.gpu/st17).
#   1. timing alone on the GPU: GRAD_AB_ST17=1 grad_ab --long (8×4096, 1×32768), gated_delta then delta
#   2. side by side: grad_ab --check (GRAD_AB_ST17=1) both rules; the trimmed suite; memcheck and racecheck of the
#      ring kernels (kns=state16_ring) on the suite's 32-chunk, 128-chunk and 32-column cases and on grad_ab --check
set -u
B=/tmp/st17; mkdir -p $B/o
export PATH=/usr/local/cuda/bin:$PATH
t0=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - t0 )) s" >> $OUT/log.txt; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/log.txt 2>&1
for f in objs/*.o.xz; do xz -dc $f > $B/o/$(basename $f .xz) & done; wait
I="$B/o/backward_phases.inst.o $B/o/delta.inst.o $B/o/gated_delta.inst.o"
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $B/o/grad_ab_gated_delta.o $I -o $B/ab_gated_delta >> $OUT/log.txt 2>&1 &
$L $B/o/grad_ab_delta.o $I -o $B/ab_delta >> $OUT/log.txt 2>&1 &
$L $B/o/st17_backward16_test.o $B/o/main.o $I -o $B/t17 >> $OUT/log.txt 2>&1 &
wait
ls -la $B >> $OUT/log.txt
el linked
export GRAD_AB_ST17=1
for r in gated_delta delta; do timeout 60 $B/ab_$r --long > $OUT/time_$r.jsonl 2>&1; echo "time $r rc $?" >> $OUT/log.txt; el "time $r"; done
( for r in gated_delta delta; do timeout 40 $B/ab_$r --check; echo "check $r rc $?"; done > $OUT/check.jsonl 2>&1 ) &
( timeout 100 $B/t17 > $B/t17.log 2>&1; echo "suite rc $?" >> $B/t17.log ) &
S="compute-sanitizer --kernel-regex kns=state16_ring --error-exitcode 9"
( timeout 90 $S --tool memcheck $B/ab_gated_delta --check > $B/mc1.log 2>&1; echo "memcheck ring grad_ab --check gated_delta rc $?" >> $B/mc1.log ) &
( timeout 90 $S --tool memcheck $B/t17 "-tc=*bf16 over 32 chunks*,*st17 ring passes*,*128 chunks*" > $B/mc2.log 2>&1; echo "memcheck ring suite (32, 128 chunks, 32 columns) rc $?" >> $B/mc2.log ) &
( timeout 90 $S --tool racecheck $B/t17 "-tc=*bf16 over 32 chunks*" > $B/rc1.log 2>&1; echo "racecheck ring16 (bf16 over 32 chunks) rc $?" >> $B/rc1.log ) &
( timeout 90 $S --tool racecheck $B/t17 "-tc=*st17 ring passes*" > $B/rc2.log 2>&1; echo "racecheck ring32 (st17 case) rc $?" >> $B/rc2.log ) &
wait
el checks
{ echo "-- suite"; grep -E "ERROR|FAILED|test cases|assertions|rc " $B/t17.log | head -40
  for f in $B/mc1.log $B/mc2.log $B/rc1.log $B/rc2.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases|hazard|rc " $f | head -8; done; } > $OUT/tests.txt 2>&1
grep -B3 -A15 "ERROR" $B/t17.log | head -80 > $OUT/failures.txt 2>&1
el done
