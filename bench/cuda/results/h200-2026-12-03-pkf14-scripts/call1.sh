#!/usr/bin/env bash
# pkf14's device call: the A/B driver built on the CPU machine (sm_90a), carried xz'd in .gpu/pkf14/bins.
#   bash .gpu/pkf14/call1.sh     (carry .gpu/pkf14)
set -u
export PATH=/usr/local/cuda/bin:$PATH
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s" >> $OUT/checks.txt; }
D=/tmp/pk; mkdir -p $D; xz -dc .gpu/pkf14/bins/perkey_delta_ab.xz > $D/ab && chmod +x $D/ab
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $OUT/checks.txt
el check
timeout 60 $D/ab --check > $OUT/check.jsonl 2>&1; echo "check rc $?" >> $OUT/checks.txt
el sanitizers
( timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $D/ab --check > /tmp/mc.log 2>&1; echo "memcheck --check rc $?" >> /tmp/mc.log ) &
( timeout 120 compute-sanitizer --tool racecheck --kernel-regex kns=perkey_delta_kernel --error-exitcode 9 $D/ab --check > /tmp/rc.log 2>&1; echo "racecheck --check rc $?" >> /tmp/rc.log ) &
wait
grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|rc " /tmp/mc.log /tmp/rc.log >> $OUT/checks.txt
grep -h -E "Error|Hazard|hazard" /tmp/mc.log /tmp/rc.log | head -20 >> $OUT/checks.txt
el timing
timeout 150 $D/ab > $OUT/ab.jsonl 2>&1; echo "ab rc $?" >> $OUT/checks.txt
el done
cat $OUT/checks.txt; cat $OUT/check.jsonl | cut -c1-600; cat $OUT/ab.jsonl
