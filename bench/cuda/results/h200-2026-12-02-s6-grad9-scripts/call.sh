#!/usr/bin/env bash
# grad9's device call (#14, phase 4 through block_gemm_ring): one call, everything side by side.
#  - build on the device (16 cores, sm_90a), all at once: grad_ab per rule standalone (no extern instances: the
#    rule's backward and main's phase 4, grad_ab_v0.hpp), the 7 instance units, main.cu + backward_test.cu, the
#    conformance runner;
#  - while the suite compiles, on the GPU: memcheck and racecheck (phase-4 kernels) on grad_ab --check (gated_delta, kda: partial
#    chunks, K = 64 V = 96 with GVA, K = 37 V = 45), then grad_ab at 8x4096 (phase 4 new vs main's, whole backward
#    both ways), ncu sections on both chunk_grad kernels (gated_delta), then the other rules' grad_ab;
#  - then the backward suite (LINEA_BACKWARD_ERRORS=1) and the conformance runner.
# Run from the repository root: LIMIT=180 bash .gpu/grad9/bench/cuda/results/h200-2026-12-02-s6-grad9-scripts/call.sh
set -u
R=$(cd "$(dirname "$0")/../../../.." && pwd)   # .gpu/grad9
cd $R
export PATH=/usr/local/cuda/bin:$PATH
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s"; }
left() { echo $(( ${LIMIT:-180} - ($(date +%s) - S) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
D=$(cd ../deps && pwd); C=$(cd ../conformance && pwd); B=/tmp/b; mkdir -p $B
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
el build
( { for r in gated_delta kda delta gdn2 simple_gla gla additive; do echo "A $R/bench/cuda/grad_ab.cu $r"; done
    echo "E $R/tests/backend/cuda/backward_test.cu x"
    for s in $R/tests/backend/cuda/instances/*.cu; do echo "I $s x"; done
    for s in $R/tests/backend/cuda/main.cu $R/tools/linea_cuda_conformance.cu; do echo "E $s x"; done; } |
  xargs -P 17 -L 1 sh -c 'case $1 in I) o='$B'/$(basename "$2" .cu).inst.o; d="-c";; E) o='$B'/$(basename "$2" .cu).o; d="-c -DLINEA_CUDA_EXTERN_INSTANCES";; A) o='$B'/ab_$3.tmp; d="-lineinfo -DGRAD_AB_RULE=linea::$3";; esac; t=$(date +%s); nvcc '"$FL"' $d "$2" -o "$o" || echo "FAILED: $2 $3"; [ $1 = A ] && mv $o '$B'/ab_$3; echo "$(( $(date +%s) - t )) s $2 $3"' _
  L="nvcc -gencode=arch=compute_90a,code=sm_90a"
  $L $B/main.o $B/backward_test.o $B/*.inst.o -o $B/tests.tmp && mv $B/tests.tmp $B/tests
  $L $B/linea_cuda_conformance.o $B/*.inst.o -o $B/conf
  echo "linked at $(( $(date +%s) - S )) s" ) > $OUT/build.log 2>&1 &
waitfor() { while [ ! -e "$1" ] && [ $(left) -gt 15 ]; do sleep 1; done; [ -e "$1" ]; }
# GPU work while the suite compiles
for r in gated_delta kda; do
  waitfor $B/ab_$r || break; el "ab_$r ready"
  timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_$r --check > $OUT/check_$r.log 2>&1; echo "memcheck grad_ab --check $r rc $?" >> $OUT/san.log
  grep -E "ERROR SUMMARY" $OUT/check_$r.log >> $OUT/san.log
  timeout 25 $B/ab_$r >> $OUT/ab.jsonl 2>&1 || echo "ab $r rc $?" >> $OUT/ab.jsonl
done
el racecheck
timeout 45 compute-sanitizer --tool racecheck --kernel-regex kns=grad_kernel --error-exitcode 9 $B/ab_gated_delta --check > /tmp/rc_gd.log 2>&1; echo "racecheck grad_ab --check gated_delta rc $?" >> $OUT/san.log; grep -E "RACECHECK SUMMARY|ERROR SUMMARY" /tmp/rc_gd.log >> $OUT/san.log
timeout 45 compute-sanitizer --tool racecheck --kernel-regex kns=grad_kernel --error-exitcode 9 $B/ab_kda --check > /tmp/rc_kda.log 2>&1; echo "racecheck grad_ab --check kda rc $?" >> $OUT/san.log; grep -E "RACECHECK SUMMARY|ERROR SUMMARY" /tmp/rc_kda.log >> $OUT/san.log
el ncu
[ $(left) -gt 90 ] && GRAD_AB_ONLY=gated_delta timeout 45 ncu -k regex:chunk_grad -c 2 --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats $B/ab_gated_delta --once > $OUT/ncu_gd.txt 2>&1
for r in delta gdn2 simple_gla gla additive; do
  [ $(left) -gt 70 ] || break; [ -e $B/ab_$r ] || continue
  timeout 20 $B/ab_$r >> $OUT/ab.jsonl 2>&1 || echo "ab $r rc $?" >> $OUT/ab.jsonl
  timeout 20 compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_$r --check > /tmp/mc_$r.log 2>&1; echo "memcheck grad_ab --check $r rc $?" >> $OUT/san.log; grep -E "ERROR SUMMARY" /tmp/mc_$r.log >> $OUT/san.log
done
el suite
waitfor $B/tests && {
  (timeout $(( $(left) - 3 )) $B/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log) &
  LINEA_BACKWARD_ERRORS=1 timeout $(( $(left) - 3 )) $B/tests > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log
  wait; }
el summary
grep -E "FAILED|error|spill|[0-9] s |linked" $OUT/build.log | cut -c1-240 | head -40
cat $OUT/san.log; cut -c1-1500 $OUT/ab.jsonl
grep -E "ERROR|FAILED|test cases|assertions|rc " $OUT/tests.log | head -20
for ty in float32 bf16 fp16; do grep -E " $ty .*e[-+][0-9]+$" $OUT/tests.log | awk '{v = $NF + 0; if (v > m) {m = v; l = $0}} END {print "worst:", l}'; done
grep -E '^FAIL' $OUT/conformance.log | head; echo "backward lines: $(grep -c backward $OUT/conformance.log)"; tail -n 3 $OUT/conformance.log
grep -E "chunk_grad|Duration|Achieved Occupancy|Registers Per|Theoretical Occ|Block Limit|Warp Cycles Per Issued|Stall|Memory Throughput|Compute \(SM\)" $OUT/ncu_gd.txt | head -40
el done
