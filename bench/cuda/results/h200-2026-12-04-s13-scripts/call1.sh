#!/usr/bin/env bash
# Session 13's prepared call (NOT run in session 13: no device was lent). Carry .gpu/s13, filled by build_local.sh.
# Checks session 13's three switches (backward/phases.hpp, backward/work.hpp; all off by default) in one call:
#   1. side by side, the "all" build (every switch on): the CUDA suite; conformance fla + linea; memcheck of the new
#      per-key width case (gla, gdn2 subcases) and of the per-key cases at small K; racecheck of the per-key 16-bit
#      passes (gdn2 subcase) and of per_key_grad_kernel's Inter form (kda subcase)
#   2. alone: s13_ab --check (the per-key passes and phase 4, both forms on one workspace: distances at small odd
#      shapes, ordinary and extreme gates). The timings are call2.sh's (same carry, right after).
# If the suite and conformance pass, flip the switches whose A/B gains (and drop their macros).
# Expected (not measured: state14 / st17's pass timings, grad13's phase-4 split): kda, gdn2 bwd about −1.1 ms at
# 8×4096 and −4.6 ms at 1×32768 from the passes; −1.5 to −2.5 ms at both shapes from Inter.
# Writes under $OUT: tests.log, conformance.log, checks.txt (sanitizers, fuzz), s13_check.jsonl.
# Command time ~6 min (timeout_s 600; the suite, sanitizers and fuzz side by side within ~300 s).
set -u
S=${S:-.gpu/s13}; B=/tmp/s13; mkdir -p $B/conf  # (session 15 ran it with S=.gpu/s13a)
for f in linea_cuda_tests linea_cuda_conformance bench_all bench_base bench_passes bench_inter s13_ab cuda_fuzz; do
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
[ -x $B/cuda_fuzz ] && ( for c in ${FUZZ_CASES:-1303 2431 212 2518 418}; do timeout 25 $B/cuda_fuzz --seed 20261207 --from $c --to $((c + 1)) 2>&1 | grep '^RESULT' | cut -c1-300; done
  timeout 150 $B/cuda_fuzz --seed ${FUZZ_SEED:-20261250} --from 0 --to 400 --budget 140 > /tmp/fzr.log 2>&1; echo "fuzz seed ${FUZZ_SEED:-20261250} rc $?"
  grep '^RESULT' /tmp/fzr.log | awk '{print $3}' | sort | uniq -c; grep -E '^RESULT [0-9]+ (FAIL|ILLCOND)|^BUDGET' /tmp/fzr.log | cut -c1-300 | head -20
  echo "per-key 16-bit cases: $(grep -E '^RESULT' /tmp/fzr.log | grep -E ' (kda|gdn2|gla) ' | grep -cE ' (bf16|fp16) ')" ) > /tmp/fz.log 2>&1 &
( timeout 250 compute-sanitizer --tool memcheck --error-exitcode 9 $B/s13_ab --check > /tmp/mc5.log 2>&1
  echo "memcheck [s13_ab --check] rc $?" >> /tmp/mc5.log ) &
wait
{ for f in /tmp/mc*.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:|assertions:|rc " $f | cut -c1-400; done
  echo "-- fuzz (the switches on)"; cat /tmp/fz.log 2>/dev/null; } > $OUT/checks.txt 2>&1
grep -E "ERROR|FAILED|test cases|assertions|skipped|rc " $OUT/tests.log | head -20
grep -B3 -A14 -E "ERROR:|FAILED" $OUT/tests.log | head -80
grep -E "^(kda|gla) (bf16|fp16) " $OUT/tests.log | awk '{print $NF, $0}' | sort -g | tail -8  # worst per-key 16-bit errors
grep -E '^FAIL' $OUT/conformance.log | head; tail -n 3 $OUT/conformance.log
cat $OUT/checks.txt
# 2. alone on the GPU: s13_ab's distances at the small shapes (extreme gates too); the timings are call2.sh
timeout 120 $B/s13_ab --check > $OUT/s13_check.jsonl 2>&1; echo "s13_ab --check rc $?" >> $OUT/s13_check.jsonl
grep -o '"label":"[^"]*","rule":"[^"]*"\|"extreme":[01]\|"passes_worst":[^,]*\|"grad_worst":[^,}]*' $OUT/s13_check.jsonl | paste -sd' ' | sed 's/"label"/\n"label"/g'
date
