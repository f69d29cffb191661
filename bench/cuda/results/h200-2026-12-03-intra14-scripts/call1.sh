#!/bin/bash
# intra14 call 1: grad_ab (built on the CPU machine, carried xz'd) — distances, sanitizers on the changed kernels, timings
set -u
G=.gpu/intra14; B=/tmp/i14; mkdir -p $B
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s" | tee -a $OUT/log.txt; }
R="${RULES:-gated_delta gated_delta_h0 delta simple_gla}"
for r in $R; do xz -dc $G/ab_$r.xz > $B/ab_$r && chmod +x $B/ab_$r; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $OUT/log.txt
el checks
for r in $R; do ( timeout 60 $B/ab_$r --check > $B/check_$r.jsonl 2>&1; echo "check $r rc $?" >> $B/check_$r.jsonl ) & done
wait
for r in $R; do echo "# $r"; cat $B/check_$r.jsonl; done > $OUT/check.jsonl
el sanitizers
i=0; KR='kns=chunk_grad16|inter_grad_kernel'
for r in gated_delta delta simple_gla; do i=$((i+1))
  ( timeout 70 compute-sanitizer --tool memcheck --kernel-regex "$KR" --error-exitcode 9 $B/ab_$r --check > $B/mc$i.log 2>&1; echo "memcheck $r rc $?" >> $B/mc$i.log ) &
done
for r in gated_delta simple_gla; do i=$((i+1))
  ( timeout 70 compute-sanitizer --tool racecheck --kernel-regex "$KR" --error-exitcode 9 $B/ab_$r --check > $B/mc$i.log 2>&1; echo "racecheck $r rc $?" >> $B/mc$i.log ) &
done
wait
for f in $B/mc*.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|rc |Invalid|Race|error" $f | head -8; done > $OUT/sanitizers.txt
cat $OUT/sanitizers.txt
el timing
for r in $R; do GRAD_AB_CG16=1 timeout 60 $B/ab_$r ${AB_ARGS:-} > $OUT/time_$r.jsonl 2>&1; echo "time $r rc $?" >> $OUT/time_$r.jsonl
  echo "# $r"; grep -h -o -E '"T":[0-9]*|"(cg_main16_ms|cg16_ms|cg_speedup|grad_main16_ms|grad_lib16_ms|grad16_speedup|bwd_new_ms|bwd_old_ms|bwd_lib_ms|inter_ms|ut_ms|new_vs_main16_worst|worst_new_vs_old)":[0-9.e+-]*|rc [0-9]*|error.*' $OUT/time_$r.jsonl | tr '\n' ' '; echo; done
el done
grep -h -o -E '^# .*|"T":[0-9]*|"K":[0-9]*|"extreme":[0-9]|"(new_vs_main16_worst|worst_new_vs_old|main16_vs_old_worst|lib_vs_new)":[0-9.e+-]*|rc [0-9]*|error.*' $OUT/check.jsonl | tr '\n' ' '
