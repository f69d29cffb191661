#!/bin/bash
# intra14 call 2: the final tree's grad_ab (3 rules) and the backward suite's 16-bit scalar-decay cases
# (bwd16_test.cu, built on the CPU machine), carried xz'd: checks, suite, sanitizers side by side; then timings alone
set -u
G=.gpu/intra14; B=/tmp/i14; mkdir -p $B
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s" | tee -a $OUT/log.txt; }
for x in ab_gated_delta ab_delta ab_simple_gla bwd16_test; do xz -dc $G/c2_$x.xz > $B/$x && chmod +x $B/$x; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $OUT/log.txt
el checks
( LINEA_BACKWARD_ERRORS=1 timeout 75 $B/bwd16_test > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
for r in gated_delta delta simple_gla; do ( timeout 40 $B/ab_$r --check > $B/check_$r.jsonl 2>&1; echo "check $r rc $?" >> $B/check_$r.jsonl ) & done
KR='kns=chunk_grad16'
( timeout 45 compute-sanitizer --tool memcheck --kernel-regex "$KR" --error-exitcode 9 $B/ab_gated_delta --check > $B/mc1.log 2>&1; echo "memcheck gated_delta rc $?" >> $B/mc1.log ) &
( timeout 45 compute-sanitizer --tool memcheck --kernel-regex "$KR" --error-exitcode 9 $B/ab_simple_gla --check > $B/mc2.log 2>&1; echo "memcheck simple_gla rc $?" >> $B/mc2.log ) &
( timeout 45 compute-sanitizer --tool racecheck --kernel-regex "$KR" --error-exitcode 9 $B/ab_gated_delta --check > $B/mc3.log 2>&1; echo "racecheck gated_delta rc $?" >> $B/mc3.log ) &
( timeout 45 compute-sanitizer --tool racecheck --kernel-regex "$KR" --error-exitcode 9 $B/ab_delta --check > $B/mc4.log 2>&1; echo "racecheck delta rc $?" >> $B/mc4.log ) &
wait
for r in gated_delta delta simple_gla; do echo "# $r"; cat $B/check_$r.jsonl; done > $OUT/check.jsonl
for f in $B/mc*.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|rc |Invalid|Race|error" $f | head -8; done > $OUT/sanitizers.txt
cat $OUT/sanitizers.txt
grep -E "test cases|assertions|rc |ERROR|FAILED" $OUT/tests.log | head -12
awk '{ if ($NF+0 > w) w = $NF+0 } END { print "worst suite error", w }' <(grep -E " [0-9.]+e[-+][0-9]+$" $OUT/tests.log)
el timing
for r in gated_delta delta simple_gla; do a=""; [ $r = gated_delta ] && a=--long
  GRAD_AB_CG16=1 timeout 30 $B/ab_$r $a > $OUT/time_$r.jsonl 2>&1; echo "time $r rc $?" >> $OUT/time_$r.jsonl
  echo "# $r"; grep -h -o -E '"T":[0-9]*|"(cg_main16_ms|cg16_ms|cg_speedup|cg16_default_carveout_ms|cg16_ctas_per_sm|grad_main16_ms|grad_lib16_ms|grad16_speedup|bwd_new_ms|bwd_old_ms|bwd_lib_ms|inter_ms|ut_ms|new_vs_main16_worst|worst_new_vs_old)":[0-9.e+-]*|rc [0-9]*|error.*' $OUT/time_$r.jsonl | tr '\n' ' '; echo; done
el done
grep -h -o -E '^# .*|"T":[0-9]*|"K":[0-9]*|"extreme":[0-9]|"(new_vs_main16_worst|worst_new_vs_old|main16_vs_old_worst|lib_vs_new)":[0-9.e+-]*|rc [0-9]*|error.*' $OUT/check.jsonl | tr '\n' ' '
