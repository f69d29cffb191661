#!/usr/bin/env bash
# st17's device call 3 (short): the final dispatch (phases.hpp: ring passes for the erasing rules, 16 columns where
# they fit in one wave, else 32, also the reverse pass at wide shapes). Rebuilt backward_phases, delta, gated_delta
# units, the trimmed suite and grad_ab (gated_delta; its state14 reverse now with first_chunk_adjoint, as the library).
#   1. GRAD_AB_ST17=1 grad_ab --long, gated_delta (timing alone)   2. the trimmed 16-bit suite
set -u
B=/tmp/st17; mkdir -p $B/o
export PATH=/usr/local/cuda/bin:$PATH
t0=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - t0 )) s" >> $OUT/log.txt; }
for f in objs/*.o.xz; do xz -dc $f > $B/o/$(basename $f .xz) & done; wait
I="$B/o/backward_phases.inst.o $B/o/delta.inst.o $B/o/gated_delta.inst.o"
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $B/o/grad_ab_gated_delta.o $I -o $B/ab_gated_delta >> $OUT/log.txt 2>&1 &
$L $B/o/st17_backward16_test.o $B/o/main.o $I -o $B/t17 >> $OUT/log.txt 2>&1 &
wait
el linked
GRAD_AB_ST17=1 timeout 12 $B/ab_gated_delta --long > $OUT/time_gated_delta.jsonl 2>&1; echo "time rc $?" >> $OUT/log.txt
el timed
timeout 25 $B/t17 > $B/t17.log 2>&1; echo "suite rc $?" >> $B/t17.log
grep -E "ERROR|FAILED|test cases|assertions|rc " $B/t17.log | head -40 > $OUT/tests.txt
el done
