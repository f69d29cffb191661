#!/usr/bin/env bash
# state14 device call: prebuilt (here) grad_ab binaries and the trimmed 16-bit backward suite; checks side by side,
# then timings alone on the GPU.
set -u
G=$PWD/.gpu/state14; B=/tmp/s14; mkdir -p $B
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - START )) s" >> $OUT/log.txt; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/log.txt 2>&1
for f in $G/bin/*.xz; do xz -dc $f > $B/$(basename $f .xz); chmod +x $B/$(basename $f .xz); done
ls $B >> $OUT/log.txt
el checks
export GRAD_AB_STATE16=1
( for r in gated_delta delta simple_gla; do timeout 30 $B/ab_$r --check; echo "check $r rc $?"; done > $OUT/check.jsonl 2>&1 ) &
( timeout 60 compute-sanitizer --tool memcheck --kernel-regex kns=state16 --error-exitcode 9 $B/ab_gated_delta --check > /tmp/mc1.log 2>&1; echo "memcheck gd rc $?" >> /tmp/mc1.log ) &
( timeout 60 compute-sanitizer --tool memcheck --kernel-regex kns=state16 --error-exitcode 9 $B/ab_simple_gla --check > /tmp/mc2.log 2>&1; echo "memcheck sg rc $?" >> /tmp/mc2.log ) &
( timeout 60 compute-sanitizer --tool racecheck --kernel-regex kns=state16 --error-exitcode 9 $B/ab_delta --check > /tmp/rc1.log 2>&1; echo "racecheck delta rc $?" >> /tmp/rc1.log ) &
( [ -x $B/t16 ] && { timeout 65 $B/t16 > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log; } ) &
wait
{ for f in /tmp/mc1.log /tmp/mc2.log /tmp/rc1.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|rc |Invalid|Race|hazard" $f | sort | uniq -c | head -20; done; } > $OUT/sanitizers.txt
grep -h -E "test cases|assertions|rc " $OUT/tests.log >> $OUT/log.txt
el timing
for r in gated_delta delta simple_gla; do [ $(( $(date +%s) - START )) -gt 95 ] && { echo "skip $r" >> $OUT/log.txt; continue; }; timeout 35 $B/ab_$r --long > $OUT/time_$r.jsonl 2>&1; echo "time $r rc $?" >> $OUT/log.txt; el "$r done"; done
el end
