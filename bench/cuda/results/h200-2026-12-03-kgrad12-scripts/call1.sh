#!/usr/bin/env bash
# kgrad12 call 1: verify and measure phase 4 for per-key decays by 16 × 16 blocks. Binaries built on the CPU machine
# (build_other.sh, build_mine.sh, build2.sh beside this file; sm_90a, nvcc 13.0), carried xz'd in .gpu/kgrad12/bin:
#   tests        main.cu + backward_test.cu + the 7 instance units (the CUDA backward suite)
#   conf         linea_cuda_conformance
#   ab_kda, ab_gdn2, ab_gla   grad_ab.cu for one rule (phase 4: library vs main 861c7ef's in bwd::v0)
# 1. side by side: the suite (LINEA_BACKWARD_ERRORS=1), conformance, memcheck and racecheck (per_key_grad) of
#    ab_<rule> --check (B = 2 T = 150 K = 64 V = 96 GVA; T = 130; K = 37 V = 45);
# 2. alone: ab_<rule> --long (8×4096 and 1×32768: distances, phase 4 and whole backward old vs new, interleaved).
#   LIMIT=190 bash .gpu/kgrad12/call1.sh    (carry .gpu/kgrad12 .gpu/conformance)
set -u
export PATH=/usr/local/cuda/bin:$PATH
G=$PWD/.gpu/kgrad12; C=$PWD/.gpu/conformance; B=/tmp/b; mkdir -p $B
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s" | tee -a $OUT/steps.txt; }
left() { echo $(( ${LIMIT:-190} - ($(date +%s) - S) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/steps.txt
for f in $G/bin/*.xz; do n=$(basename $f .xz); xz -dc $f > $B/$n & done; wait; chmod +x $B/*; ls $B | tr '\n' ' ' >> $OUT/steps.txt
el checks
(LINEA_BACKWARD_ERRORS=1 timeout 100 $B/tests > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log) &
(timeout 60 $B/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log) &
for r in kda gdn2 gla; do
  (timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_$r --check > /tmp/m_$r.log 2>&1; echo "memcheck ab_$r --check rc $?" >> /tmp/m_$r.log) &
  (timeout 90 compute-sanitizer --tool racecheck --kernel-regex kns=per_key_grad --error-exitcode 9 $B/ab_$r --check > /tmp/r_$r.log 2>&1; echo "racecheck (per_key_grad) ab_$r --check rc $?" >> /tmp/r_$r.log) &
done
wait
{ for f in /tmp/m_*.log /tmp/r_*.log; do echo "-- $f"; grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|rc [0-9]" $f; grep -h -m5 -E "Invalid|Race|Hazard|rror" $f; done
  echo "-- ab --check distances (under memcheck)"; grep -h '^{' /tmp/m_*.log; } > $OUT/san.txt 2>&1
el timing
for r in kda gdn2 gla; do
  [ $(left) -gt 25 ] && { timeout $(( $(left) - 10 > 60 ? 60 : $(left) - 10 )) $B/ab_$r --long >> $OUT/ab.jsonl 2>&1 || echo "ab_$r rc $?" >> $OUT/ab.jsonl; }
  el "ab_$r done"
done
el done
grep -E "test cases|assertions|rc " $OUT/tests.log | head; grep -E "^FAIL" $OUT/conformance.log | head -5; tail -n 2 $OUT/conformance.log
cut -c1-400 $OUT/san.txt | head -40
cat $OUT/ab.jsonl
