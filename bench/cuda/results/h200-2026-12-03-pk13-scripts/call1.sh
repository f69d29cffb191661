#!/usr/bin/env bash
# pk13 call 1: verify and measure phase 4 for per-key decays with the diagonal blocks on tensor cores. Binaries built
# on the CPU machine (queue.sh: ab.sh, build_units.sh beside this file; sm_90a, nvcc 13.0), carried xz'd in .gpu/pk13/bin:
#   tests        main.cu + backward_test.cu + the 7 instance units (the CUDA backward suite)
#   conf         linea_cuda_conformance
#   ab_kda, ab_gdn2, ab_gla   grad_ab.cu for one rule (phase 4: library vs main c94ecb9's in bwd::v0)
#   ab_kda_wide, ab_gla_wide  the same with -DLINEA_BWD_DIAG_SPAN=-1 (every diagonal (block, channel) on the exact path)
#   ab_kda_f32   kda with float32 inputs (-DGRAD_AB_FLOAT)
# 1. side by side: the suite (LINEA_BACKWARD_ERRORS=1), conformance, memcheck and racecheck (per_key_grad) of
#    ab_<rule> --check, the _wide builds' --check;
# 2. alone: ab_kda --long, ab_gla --long, ab_gdn2, ab_kda_f32 (interleaved old/new, best of three medians);
# 3. if time is left: ncu of the new and old kda per_key_grad (one launch each).
#   LIMIT=170 bash .gpu/pk13/call1.sh    (carry .gpu/pk13 .gpu/conformance)
set -u
export PATH=/usr/local/cuda/bin:$PATH
G=$PWD/.gpu/pk13; C=$PWD/.gpu/conformance; B=/tmp/b; mkdir -p $B
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s" | tee -a $OUT/steps.txt; }
left() { echo $(( ${LIMIT:-170} - ($(date +%s) - S) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/steps.txt
for f in $G/bin/*.xz; do n=$(basename $f .xz); xz -dc $f > $B/$n & done; wait; chmod +x $B/*; ls $B | tr '\n' ' ' >> $OUT/steps.txt
el checks
(LINEA_BACKWARD_ERRORS=1 timeout 110 $B/tests > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log) &
(timeout 60 $B/conf $C/fla $C/linea > /tmp/conformance.log 2>&1; echo "conf rc $?" >> /tmp/conformance.log) &
for r in kda gdn2 gla; do
  (timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_$r --check > /tmp/m_$r.log 2>&1; echo "memcheck ab_$r --check rc $?" >> /tmp/m_$r.log) &
  (timeout 100 compute-sanitizer --tool racecheck --kernel-regex kns=per_key_grad --error-exitcode 9 $B/ab_$r --check > /tmp/r_$r.log 2>&1; echo "racecheck (per_key_grad) ab_$r --check rc $?" >> /tmp/r_$r.log) &
done
for r in kda_wide gla_wide; do (timeout 60 $B/ab_$r --check > /tmp/w_$r.log 2>&1; echo "ab_$r --check rc $?" >> /tmp/w_$r.log) & done
wait
{ for f in /tmp/m_*.log /tmp/r_*.log; do echo "-- $f"; grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|rc [0-9]" $f; grep -h -m5 -E "Invalid|Race|Hazard|rror" $f; done
  echo "-- ab --check distances (under memcheck)"; grep -h '^{' /tmp/m_*.log
  echo "-- the _wide builds (every diagonal pair exact), --check"; cat /tmp/w_*.log
  echo "-- conformance"; grep -E "^FAIL|passed|failed|rc " /tmp/conformance.log | tail -5; } > $OUT/checks.txt 2>&1
el timing
for r in kda gla gdn2 kda_f32; do
  a=""; [ $r = kda ] || [ $r = gla ] && a=--long
  [ $(left) -gt 30 ] && { timeout $(( $(left) - 10 > 70 ? 70 : $(left) - 10 )) $B/ab_$r $a >> $OUT/ab.jsonl 2>&1 || echo "ab_$r rc $?" >> $OUT/ab.jsonl; }
  el "ab_$r done"
done
if [ $(left) -gt 45 ] && command -v ncu > /dev/null; then
  GRAD_AB_ONLY=kda timeout $(( $(left) - 8 )) ncu --clock-control none --section SpeedOfLight --section LaunchStats \
    --section Occupancy --section WarpStateStats --section InstructionStats --section SchedulerStats \
    -k regex:per_key_grad -c 2 $B/ab_kda --once > $OUT/ncu.txt 2>&1
  el ncu
fi
el done
grep -E "test cases|assertions|rc " $OUT/tests.log | head; cut -c1-300 $OUT/checks.txt | head -60
cat $OUT/ab.jsonl
