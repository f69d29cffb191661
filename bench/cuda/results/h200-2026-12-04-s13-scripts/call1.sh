#!/usr/bin/env bash
# Session 13's prepared call (NOT run in session 13: no device was lent; carry .gpu/s13, filled by build_local.sh):
# the state-pass dispatch behind LINEA_BWD_STATE16_PER_KEY=1 (kda, gdn2, gla with 16-bit inputs on the 16-bit passes'
# PerKey form) and LINEA_BWD_STATE16_RING_ADDING=1 (the rules that only add on the two-stage ring at narrow tiles).
# "new" binaries are built with both on, base_bench with the defaults (main's dispatch). If everything passes and the
# A/B gains, flip both defaults in backward/phases.hpp (and drop the macros). Expected (from state14 / st17's pass
# timings, not measured): kda, gdn2 bwd −1.1 ms at 8×4096 and −4.6 ms at 1×32768; gla −1.1 / −5 ms.
#   1. side by side: the CUDA suite; conformance fla + linea; memcheck of the new case (gla, gdn2 subcases) and of
#      the per-key cases at small K; racecheck of the per-key 16-bit passes on the new case's gdn2 subcase
#   2. alone: linea_cuda_bench --backward for kda and gla at 8×4096 and 1×32768, main's binary and the branch's
#      interleaved (base, new, base, new), and gated_delta 8×4096 as the control (its path did not change)
# Writes under $OUT: tests.log, conformance.log, checks.txt, ab.jsonl.
set -u
S=.gpu/s13; B=/tmp/s13; mkdir -p $B/conf
for f in linea_cuda_tests linea_cuda_conformance linea_cuda_bench base_bench cuda_fuzz; do
  [ -e $S/$f.xz ] && { xz -dc $S/$f.xz > $B/$f && chmod +x $B/$f; }; done
tar xJf $S/conf.tar.xz -C $B/conf
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T=$B/linea_cuda_tests; C=$B/conf/conformance
( timeout 240 $T > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
( timeout 150 $B/linea_cuda_conformance $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
( timeout 220 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=*per-key decays with 16-bit inputs at each state-pass tile width*" -sc=gla,gdn2 > /tmp/mc1.log 2>&1
  echo "memcheck [per-key 16-bit, each width: gla, gdn2] rc $?" >> /tmp/mc1.log ) &
( timeout 220 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=*nearly singular chunk transitions at small K?*kda and gdn2*" > /tmp/mc2.log 2>&1
  echo "memcheck [nearly singular, kda and gdn2] rc $?" >> /tmp/mc2.log ) &
( timeout 220 compute-sanitizer --tool racecheck --kernel-regex kns=state16 --error-exitcode 9 $T "-tc=*per-key decays with 16-bit inputs at each state-pass tile width*" -sc=gdn2 > /tmp/mc3.log 2>&1
  echo "racecheck [state16 | per-key 16-bit, each width: gdn2] rc $?" >> /tmp/mc3.log ) &
wait
{ for f in /tmp/mc*.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:|assertions:|rc " $f | cut -c1-400; done; } > $OUT/checks.txt 2>&1
grep -E "ERROR|FAILED|test cases|assertions|skipped|rc " $OUT/tests.log | head -20
grep -B3 -A14 -E "ERROR:|FAILED" $OUT/tests.log | head -80
grep -E '^FAIL' $OUT/conformance.log | head; tail -n 3 $OUT/conformance.log
cat $OUT/checks.txt
# 2. alone on the GPU
for round in 1 2; do for bin in base_bench linea_cuda_bench; do for r in kda:8 kda:1 gla:8 gla:1 gated_delta_rule:8; do
  LINEA_BENCH_BACKWARD=$r timeout 60 $B/$bin --backward 2>&1 | grep '"kind":"backward"' | sed "s/^{/{\"bin\":\"$bin\",\"round\":$round,/" >> $OUT/ab.jsonl
done; done; done
cat $OUT/ab.jsonl
date
