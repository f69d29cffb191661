#!/usr/bin/env bash
# Session 13's prepared call (NOT run in session 13: no device was lent). Carry .gpu/s13, filled by build_local.sh.
# Checks session 13's three switches (backward/phases.hpp, backward/work.hpp; all off by default) in one call:
#   1. side by side, the "all" build (every switch on): the CUDA suite; conformance fla + linea; memcheck of the new
#      per-key width case (gla, gdn2 subcases) and of the per-key cases at small K; racecheck of the per-key 16-bit
#      passes (gdn2 subcase) and of per_key_grad_kernel's Inter form (kda subcase)
#   2. alone: linea_cuda_bench --backward for kda, gdn2, gla at 8×4096 and 1×32768 (and gated_delta 8×4096, whose
#      path none of the switches touches: the control), the four builds interleaved, two rounds
# If the suite and conformance pass, flip the switches whose A/B gains (and drop their macros).
# Expected (not measured: state14 / st17's pass timings, grad13's phase-4 split): kda, gdn2 bwd about −1.1 ms at
# 8×4096 and −4.6 ms at 1×32768 from the passes; −1.5 to −2.5 ms at both shapes from Inter.
# Writes under $OUT: tests.log, conformance.log, checks.txt, ab.jsonl.
set -u
S=.gpu/s13; B=/tmp/s13; mkdir -p $B/conf
for f in linea_cuda_tests linea_cuda_conformance bench_all bench_base bench_passes bench_inter s13_ab; do
  [ -e $S/$f.xz ] && { xz -dc $S/$f.xz > $B/$f && chmod +x $B/$f; }; done
tar xJf $S/conf.tar.xz -C $B/conf
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T=$B/linea_cuda_tests; C=$B/conf/conformance; W="*per-key decays with 16-bit inputs at each state-pass tile width*"
( LINEA_BACKWARD_ERRORS=1 timeout 300 $T > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
( timeout 150 $B/linea_cuda_conformance $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
( timeout 250 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=$W" -sc=gla,gdn2 > /tmp/mc1.log 2>&1
  echo "memcheck [per-key 16-bit widths: gla, gdn2] rc $?" >> /tmp/mc1.log ) &
( timeout 250 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=*nearly singular chunk transitions at small K?*kda and gdn2*" > /tmp/mc2.log 2>&1
  echo "memcheck [nearly singular, kda and gdn2] rc $?" >> /tmp/mc2.log ) &
( timeout 250 compute-sanitizer --tool racecheck --kernel-regex kns=state16 --error-exitcode 9 $T "-tc=$W" -sc=gdn2 > /tmp/mc3.log 2>&1
  echo "racecheck [state16 | per-key 16-bit widths: gdn2] rc $?" >> /tmp/mc3.log ) &
( timeout 250 compute-sanitizer --tool racecheck --kernel-regex kns=per_key_grad --error-exitcode 9 $T "-tc=*bf16 over 32 chunks*" > /tmp/mc4.log 2>&1
  echo "racecheck [per_key_grad Inter | bf16 over 32 chunks] rc $?" >> /tmp/mc4.log ) &
( timeout 250 compute-sanitizer --tool memcheck --error-exitcode 9 $B/s13_ab --check > /tmp/mc5.log 2>&1
  echo "memcheck [s13_ab --check] rc $?" >> /tmp/mc5.log ) &
wait
{ for f in /tmp/mc*.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:|assertions:|rc " $f | cut -c1-400; done; } > $OUT/checks.txt 2>&1
grep -E "ERROR|FAILED|test cases|assertions|skipped|rc " $OUT/tests.log | head -20
grep -B3 -A14 -E "ERROR:|FAILED" $OUT/tests.log | head -80
grep -E "^(kda|gla) (bf16|fp16) " $OUT/tests.log | awk '{print $NF, $0}' | sort -g | tail -8  # worst per-key 16-bit errors
grep -E '^FAIL' $OUT/conformance.log | head; tail -n 3 $OUT/conformance.log
cat $OUT/checks.txt
# 2. alone on the GPU: s13_ab's distances at the small shapes (extreme gates too) and its timings, then the A/B
timeout 120 $B/s13_ab --check > $OUT/s13_check.jsonl 2>&1; echo "s13_ab --check rc $?" >> $OUT/s13_check.jsonl
grep -o '"label":"[^"]*","rule":"[^"]*"\|"extreme":[01]\|"passes_worst":[^,]*\|"grad_worst":[^,}]*' $OUT/s13_check.jsonl | paste -sd' ' | sed 's/"label"/\n"label"/g'
timeout 200 $B/s13_ab --long > $OUT/s13_long.jsonl 2>&1; echo "s13_ab --long rc $?" >> $OUT/s13_long.jsonl
cat $OUT/s13_long.jsonl
for round in 1 2; do for bin in bench_base bench_passes bench_inter bench_all; do
  for r in kda:8 kda:1 gdn2:8 gdn2:1 gla:8 gla:1 gated_delta_rule:8; do
    LINEA_BENCH_BACKWARD=$r timeout 60 $B/$bin --backward 2>&1 | grep '"kind":"backward"' | sed "s/^{/{\"bin\":\"$bin\",\"round\":$round,/" >> $OUT/ab.jsonl
  done; done; done
cat $OUT/ab.jsonl
date
