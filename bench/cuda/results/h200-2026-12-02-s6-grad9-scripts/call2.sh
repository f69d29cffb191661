#!/usr/bin/env bash
# grad9's device call (#14, phase 4 through block_gemm_ring), binaries built on the CPU machine (sm_90a, nvcc 13,
# build_here.sh beside this file; the first call, call.sh, which built on the device, got no machine and cost 90 s):
#  - alone on the GPU first: grad_ab at 8x4096 for gated_delta and kda (phase 4 new vs main's on one workspace,
#    whole backward both ways), then the other rules' grad_ab where built;
#  - then side by side: the backward suite (main.cu + backward_test.cu, LINEA_BACKWARD_ERRORS=1), the conformance
#    runner, memcheck on grad_ab --check (gated_delta, kda: partial chunks, K = 64 V = 96 with GVA, K = 37 V = 45)
#    and racecheck on its phase-4 kernels;
#  - ncu sections on both chunk_grad kernels (gated_delta) if time is left.
# Carry .gpu/grad9bin (this script and the xz'd binaries) and .gpu/conformance; run from the repository root:
#   LIMIT=100 bash .gpu/grad9bin/call2.sh
set -u
cd .gpu/grad9bin
export PATH=/usr/local/cuda/bin:$PATH
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s"; }
left() { echo $(( ${LIMIT:-100} - ($(date +%s) - S) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
B=/tmp/b; mkdir -p $B; C=$(cd ../conformance && pwd)
for f in *.xz; do xz -dc $f > $B/${f%.xz} & done; wait; chmod +x $B/*; ls $B | tr '\n' ' '; echo
el timing
for r in gated_delta kda; do timeout 25 $B/ab_$r >> $OUT/ab.jsonl 2>&1 || echo "ab $r rc $?" >> $OUT/ab.jsonl; done
el checks
(LINEA_BACKWARD_ERRORS=1 timeout $(( $(left) - 25 )) $B/tests > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log) &
(timeout 40 $B/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log) &
(for r in gated_delta kda; do timeout 25 compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_$r --check > $OUT/check_$r.log 2>&1; echo "memcheck grad_ab --check $r rc $?"; grep -E "ERROR SUMMARY" $OUT/check_$r.log; done > /tmp/san1.log 2>&1) &
(for r in gated_delta kda; do timeout 25 compute-sanitizer --tool racecheck --kernel-regex kns=grad_kernel --error-exitcode 9 $B/ab_$r --check > /tmp/rc_$r.log 2>&1; echo "racecheck (phase-4 kernels) grad_ab --check $r rc $?"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY" /tmp/rc_$r.log; done > /tmp/san2.log 2>&1) &
wait
cat /tmp/san1.log /tmp/san2.log > $OUT/san.log
el more
for r in delta gdn2 simple_gla gla; do
  [ $(left) -gt 12 ] && [ -e $B/ab_$r ] || continue
  timeout 10 $B/ab_$r >> $OUT/ab.jsonl 2>&1 || echo "ab $r rc $?" >> $OUT/ab.jsonl
done
[ $(left) -gt 25 ] && GRAD_AB_ONLY=gated_delta timeout $(( $(left) - 5 )) ncu -k regex:chunk_grad -c 2 --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats $B/ab_gated_delta --once > $OUT/ncu_gd.txt 2>&1
el summary
cat $OUT/san.log; cut -c1-1500 $OUT/ab.jsonl
grep -E "ERROR|FAILED|test cases|assertions|rc " $OUT/tests.log | head -20
for ty in float32 bf16 fp16; do grep -E " $ty .*e[-+][0-9]+$" $OUT/tests.log | awk '{v = $NF + 0; if (v > m) {m = v; l = $0}} END {print "worst:", l}'; done
grep -E '^FAIL' $OUT/conformance.log | head; echo "backward lines: $(grep -c backward $OUT/conformance.log)"; tail -n 3 $OUT/conformance.log
grep -E "chunk_grad|Duration|Achieved Occupancy|Registers Per|Theoretical Occ|Block Limit|Warp Cycles Per Issued|Memory Throughput|Compute \(SM\)" $OUT/ncu_gd.txt 2>/dev/null | head -30
el done
