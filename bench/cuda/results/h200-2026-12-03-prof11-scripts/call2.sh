#!/usr/bin/env bash
# prof11 call 2: verify and measure. Binaries built on the CPU machine (build_here.sh beside this file; sm_90a,
# nvcc 13.0), carried xz'd in .gpu/prof11/bin2:
#   tests        main.cu + backward_test.cu + the 7 instance units (the CUDA backward suite)
#   conf, bench  linea_cuda_conformance, linea_cuda_bench
#   ab_all       grad_ab.cu, every rule, -lineinfo (phase 4: library vs main 07de2f4's in bwd::v0)
#   ab_gd_nosplit  grad_ab.cu for gated_delta with LINEA_BWD_SPLIT_ACC=0 (the ring/prefetch changes alone)
# 1. side by side: the suite (LINEA_BACKWARD_ERRORS=1), conformance, memcheck of the suite's bf16 32-chunk case,
#    memcheck and racecheck (phase-4 kernels) of ab_all --check (every rule: partial chunks, GVA, K/V not /4);
# 2. alone: ab_all (8x4096), ab_gd_nosplit, bench --backward; 3. ncu (full set) of the new chunk_grad (gated_delta).
#   LIMIT=215 bash .gpu/prof11/call2.sh    (carry .gpu/prof11 .gpu/conformance)
set -u
export PATH=/usr/local/cuda/bin:$PATH
G=$PWD/.gpu/prof11; C=$PWD/.gpu/conformance; B=/tmp/b; mkdir -p $B
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s" | tee -a $OUT/steps.txt; }
left() { echo $(( ${LIMIT:-215} - ($(date +%s) - S) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/steps.txt
for f in $G/bin2/*.xz; do n=$(basename $f .xz); xz -dc $f > $B/$n & done; wait; chmod +x $B/*; ls $B | tr '\n' ' ' >> $OUT/steps.txt
el checks
(LINEA_BACKWARD_ERRORS=1 timeout 120 $B/tests > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log) &
(timeout 60 $B/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log) &
(timeout 110 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests "-tc=CUDA backward: bf16 over 32 chunks*" > /tmp/s1.log 2>&1; echo "memcheck tests bf16 over 32 chunks rc $?" >> /tmp/s1.log) &
(timeout 110 compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_all --check > /tmp/s2.log 2>&1; echo "memcheck ab_all --check rc $?" >> /tmp/s2.log) &
(timeout 110 compute-sanitizer --tool racecheck --kernel-regex kns=grad_kernel --error-exitcode 9 $B/ab_all --check > /tmp/s3.log 2>&1; echo "racecheck (phase-4 kernels) ab_all --check rc $?" >> /tmp/s3.log) &
wait
{ for f in /tmp/s1.log /tmp/s2.log /tmp/s3.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|rc [0-9]" $f; grep -h -m5 -E "Invalid|Race|Hazard|error" $f; done
  echo "-- ab_all --check distances (under memcheck)"; grep '^{' /tmp/s2.log | cut -c1-600; } > $OUT/san.txt 2>&1
el timing
[ $(left) -gt 60 ] && { timeout 70 $B/ab_all > $OUT/ab.jsonl 2>&1 || echo "ab_all rc $?" >> $OUT/ab.jsonl; }
el nosplit
[ $(left) -gt 40 ] && { timeout 20 $B/ab_gd_nosplit | sed 's/^{/{"variant":"nosplit",/' >> $OUT/ab.jsonl 2>&1; }
el bench
[ $(left) -gt 35 ] && { timeout $(( $(left) - 25 > 60 ? 60 : $(left) - 25 )) $B/bench --backward > $OUT/bench_backward.jsonl 2>&1; echo "bench rc $?" >> $OUT/steps.txt; }
el ncu
if [ $(left) -gt 20 ]; then
  GRAD_AB_ONLY=gated_delta_rule timeout $(( $(left) - 3 )) ncu --clock-control none -k regex:chunk_grad_kernel -c 1 --set full --import-source yes -f -o $B/gd2 $B/ab_all --once > $B/ncu_run.txt 2>&1
  echo "ncu rc $?" >> $OUT/steps.txt
  ncu -i $B/gd2.ncu-rep --page details --print-details all > $B/gd2_details.txt 2>&1
  ncu -i $B/gd2.ncu-rep --page source --csv --print-source sass > $B/gd2_src_sass.csv 2>&1
  (cd $B && tar cJf $OUT/ncu2.tar.xz gd2_details.txt gd2_src_sass.csv ncu_run.txt)
fi
el done
grep -E "test cases|assertions|rc " $OUT/tests.log | head; grep -E "^FAIL" $OUT/conformance.log | head -5; tail -n 2 $OUT/conformance.log
cat $OUT/san.txt | cut -c1-300 | head -30
cut -c1-700 $OUT/ab.jsonl
grep -h -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|Registers Per" $B/gd2_details.txt 2>/dev/null | head -6
