#!/usr/bin/env bash
# comb15 call 2: the staged combine's row loop with its 8 loads issued before the FMAs (all objects rebuilt on the
# workstation with it, build_local.sh O=obj2). Short: the --states timings first (gated_delta, then delta until the
# timeout), then the suite's segments_test and rules_test, memcheck and racecheck of the combine, side by side.
set -u
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a "$OUT/build.txt"; }
B=/tmp/comb15; mkdir -p $B
tar -C $B -xJf objs.tar.xz; O=$B/obj; I=$(ls $O/*.inst.o)
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $O/main.o $O/segments_test.o $O/rules_test.o $I -o $B/tests >> "$OUT/build.txt" 2>&1 &
$L $O/segments_bench.o $I -o $B/sb >> "$OUT/build.txt" 2>&1 &
wait; el linked
cuobjdump -res-usage $B/sb 2>&1 | grep -A1 "staged_combine" | head -2 >> "$OUT/build.txt"
timeout 22 $B/sb --states > "$OUT/states.jsonl" 2>&1; echo "states rc $?" >> "$OUT/build.txt"
el checks
( timeout 50 $B/tests -sf="*segments_test*" > /tmp/t1.log 2>&1; echo "segments_test rc $?" >> /tmp/t1.log ) &
( timeout 50 $B/tests -sf="*rules_test*" > /tmp/t2.log 2>&1; echo "rules_test rc $?" >> /tmp/t2.log ) &
( timeout 50 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests "-tc=CUDA segment combine*,CUDA chunk kernels: states only*" > /tmp/mc1.log 2>&1; echo "memcheck combine, states-only rc $?" >> /tmp/mc1.log ) &
( timeout 50 compute-sanitizer --tool racecheck --kernel-regex kns=staged_combine_kernel --error-exitcode 9 $B/tests "-tc=CUDA segment combine*" > /tmp/rc1.log 2>&1; echo "racecheck staged_combine rc $?" >> /tmp/rc1.log ) &
wait
for f in /tmp/t1.log /tmp/t2.log /tmp/mc1.log /tmp/rc1.log; do echo "--- $f"; grep -E "ERROR|FAIL|test cases|assertions|rc [0-9]|SUMMARY" $f | head -20; done > "$OUT/checks.txt"
el done
