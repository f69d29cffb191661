#!/usr/bin/env bash
# grad12 call 1: verify and measure phase 4's small-code chunk_grad (grad_products.hpp) against main 861c7ef's
# (grad_ab_v0.hpp). Binaries built on the CPU machine (build_here.sh beside this file; sm_90a, nvcc 13.0), carried
# xz'd in .gpu/grad12/bin:
#   tests      main.cu + backward_test.cu + the 7 instance units (the CUDA backward suite)
#   ab_all     grad_ab.cu, every rule, -lineinfo (phase 4: library vs main 861c7ef's in bwd::v0), bf16
#   ab_gd_f32  grad_ab.cu for gated_delta with float32 inputs (-DGRAD_AB_FLOAT)
#   conf       linea_cuda_conformance (the 7 instance units)
# 1. side by side: the suite (LINEA_BACKWARD_ERRORS=1), conformance, memcheck and racecheck (phase-4 kernels) of ab_all --check
#    (every rule: partial chunks, GVA, K = 64 V = 96, K = 37 V = 45);
# 2. alone: the four scalar rules at 8x4096 and 1x32768 (ab_all --long), ab_gd_f32, kda and gdn2 at 8x4096
#    (per_key_grad: only the split-accumulator removal);
# 3. ncu (full set) of the new chunk_grad (gated_delta), if time is left.
#   LIMIT=230 bash .gpu/grad12/call1.sh    (carry .gpu/grad12 .gpu/conformance)
set -u
export PATH=/usr/local/cuda/bin:$PATH
G=$PWD/.gpu/grad12; C=$PWD/.gpu/conformance; B=/tmp/b; mkdir -p $B
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s" | tee -a $OUT/steps.txt; }
left() { echo $(( ${LIMIT:-230} - ($(date +%s) - S) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/steps.txt
for f in $G/bin/*.xz; do n=$(basename $f .xz); xz -dc $f > $B/$n & done; wait; chmod +x $B/*; ls $B | tr '\n' ' ' >> $OUT/steps.txt
el checks
(LINEA_BACKWARD_ERRORS=1 timeout 100 $B/tests > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log) &
(timeout 60 $B/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log) &
(timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_all --check > /tmp/s2.log 2>&1; echo "memcheck ab_all --check rc $?" >> /tmp/s2.log) &
(timeout 100 compute-sanitizer --tool racecheck --kernel-regex kns=grad_kernel --error-exitcode 9 $B/ab_all --check > /tmp/s3.log 2>&1; echo "racecheck (phase-4 kernels) ab_all --check rc $?" >> /tmp/s3.log) &
wait
{ for f in /tmp/s2.log /tmp/s3.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|rc [0-9]" $f; grep -h -m5 -E "Invalid|Race|Hazard|rror" $f; done
  echo "-- ab_all --check distances (under memcheck)"; grep '^{' /tmp/s2.log; } > $OUT/san.txt 2>&1
el timing
for r in gated_delta_rule delta_rule simple_gla linear_attn; do
  [ $(left) -gt 60 ] && { GRAD_AB_ONLY=$r timeout 30 $B/ab_all --long >> $OUT/ab.jsonl 2>&1 || echo "$r rc $?" >> $OUT/ab.jsonl; }
done
el f32
[ $(left) -gt 50 ] && { timeout 25 $B/ab_gd_f32 | sed 's/^{/{"variant":"float32",/' >> $OUT/ab.jsonl 2>&1; }
el perkey
for r in kda gdn2; do
  [ $(left) -gt 50 ] && { GRAD_AB_ONLY=$r timeout 20 $B/ab_all >> $OUT/ab.jsonl 2>&1 || echo "$r rc $?" >> $OUT/ab.jsonl; }
done
el ncu
if [ $(left) -gt 30 ]; then
  GRAD_AB_ONLY=gated_delta_rule timeout $(( $(left) - 5 )) ncu --clock-control none -k regex:chunk_grad -c 1 --set full --import-source yes -f -o $B/gd $B/ab_all --once > $B/ncu_run.txt 2>&1
  echo "ncu rc $?" >> $OUT/steps.txt
  ncu -i $B/gd.ncu-rep --page details --print-details all > $B/gd_details.txt 2>&1
  ncu -i $B/gd.ncu-rep --page source --csv --print-source sass > $B/gd_src_sass.csv 2>&1
  (cd $B && tar cJf $OUT/ncu.tar.xz gd_details.txt gd_src_sass.csv ncu_run.txt)
fi
el done
grep -E "test cases|assertions|rc " $OUT/tests.log | head; grep -E "^FAIL" $OUT/conformance.log | head -5; tail -n 2 $OUT/conformance.log
cut -c1-400 $OUT/san.txt | head -40
cut -c1-900 $OUT/ab.jsonl
grep -h -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|Registers Per|Executed Instructions  " $B/gd_details.txt 2>/dev/null | head -8
