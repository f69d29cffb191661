#!/usr/bin/env bash
# lean11's one device call (2026-12-03, issue #14): phase 1 for per-key decays two CTAs an SM for kda and gdn2.
# The branch's tree rsynced to .gpu/lean11 (this script at .gpu/lean11/bench/cuda/results/h200-2026-12-03-lean11-scripts/);
#   bash .gpu/lean11/bench/cuda/results/h200-2026-12-03-lean11-scripts/call.sh   (carry .gpu/lean11 .gpu/deps .gpu/conformance)
# 1. build (xargs -P 16): the 7 instance units (-split-compile=2), main.cu + backward_test.cu (-split-compile=4), the
#    conformance runner, bench_cuda.cu, grad_ab for kda and gdn2 (extern instances; "v1" = main 07de2f4's phase 1);
# 2. side by side: LINEA_BACKWARD_ERRORS=1 linea_cuda_tests -tc="CUDA backward*", conformance fla + linea, memcheck
#    of -tc="CUDA backward, gdn2*", memcheck and racecheck (per_key_prep kernels) of grad_ab --check kda, gdn2;
# 3. alone on the GPU: grad_ab kda, gdn2 (8×4096), bench --backward kda:8, kda:1 (1×32768).
set -u
cd "$(dirname "$0")"
R=$(cd ../../../.. && pwd); G=$(cd $R/.. && pwd)
export PATH=${CUDA_BIN:-/usr/local/cuda/bin}:$PATH
START=$(date +%s); LIMIT=${LIMIT:-150}
el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a $OUT/steps.txt; }
left() { echo $(( LIMIT - ($(date +%s) - START) )); }
B=/tmp/b; mkdir -p $B
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$G/deps -I$G/deps/eigen3"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $OUT/steps.txt 2>&1
el build
{ echo "E $R/tests/backend/cuda/backward_test.cu x"
  for s in $R/tests/backend/cuda/instances/*.cu; do echo "I $s x"; done
  for s in $R/tests/backend/cuda/main.cu $R/bench/cuda/bench_cuda.cu $R/tools/linea_cuda_conformance.cu; do echo "E $s x"; done
  for r in kda gdn2; do echo "A $R/bench/cuda/grad_ab.cu $r"; done; } |
  xargs -P 16 -L 1 sh -c 'case $1 in I) o='$B'/$(basename "$2" .cu).inst.o; d="-split-compile=2";; E) o='$B'/$(basename "$2" .cu).o; d=-DLINEA_CUDA_EXTERN_INSTANCES; [ $(basename $2) = backward_test.cu ] && d="$d -split-compile=4";; A) o='$B'/grad_ab_$3.o; d="-DLINEA_CUDA_EXTERN_INSTANCES -DGRAD_AB_RULE=linea::$3";; esac; t=$(date +%s); nvcc '"$FL"' $d -c "$2" -o "$o" || echo "FAILED: $2 $3"; echo "$(( $(date +%s) - t )) s $(basename $2) $3"' _ > $OUT/build.log 2>&1
el link
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $B/main.o $B/backward_test.o $B/*.inst.o -o $B/tests & $L $B/bench_cuda.o $B/*.inst.o -o $B/bench &
$L $B/linea_cuda_conformance.o $B/*.inst.o -o $B/conf &
for r in kda gdn2; do $L $B/grad_ab_$r.o $B/*.inst.o -o $B/ab_$r & done; wait
grep -E "FAILED|error|spill|[0-9] s " $OUT/build.log | cut -c1-240 | head -30
ls $B/tests $B/bench $B/conf $B/ab_* 2>&1 | tr '\n' ' '; echo
el checks
W=$(( $(left) - 18 )); [ $W -gt 60 ] && W=60; [ $W -lt 15 ] && W=15
T=$B/tests; C=$G/conformance
(LINEA_BACKWARD_ERRORS=1 timeout $W $T "-tc=CUDA backward*" > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log) &
(timeout $W $B/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log) &
(timeout $W compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=CUDA backward, gdn2*" > /tmp/s0.log 2>&1; echo "memcheck -tc='CUDA backward, gdn2*' rc $?" >> /tmp/s0.log) &
for r in kda gdn2; do
  (timeout $W compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_$r --check > /tmp/mc_$r.log 2>&1; echo "memcheck grad_ab --check $r rc $?" >> /tmp/mc_$r.log) &
  (timeout $W compute-sanitizer --tool racecheck --kernel-regex kns=per_key_prep --error-exitcode 9 $B/ab_$r --check > /tmp/rc_$r.log 2>&1; echo "racecheck (per_key_prep kernels) grad_ab --check $r rc $?" >> /tmp/rc_$r.log) &
done
wait
{ cat /tmp/s0.log | grep -E "SUMMARY|rc |test cases|assertions"; for r in kda gdn2; do cat /tmp/mc_$r.log; grep -E "SUMMARY|rc " /tmp/rc_$r.log; done; } > $OUT/san.log 2>&1
grep -E "ERROR|FAILED|test cases|assertions|rc " $OUT/tests.log | head -20
echo "worst error per input type (LINEA_BACKWARD_ERRORS lines: label what err):"
for ty in float32 bf16 fp16; do grep -E " $ty .*e[-+][0-9]+$" $OUT/tests.log | awk '{v = $NF + 0; if (v > m) {m = v; l = $0}} END {print "worst:", l}'; done
grep -E '^FAIL' $OUT/conformance.log | head; echo "backward lines: $(grep -c backward $OUT/conformance.log)"; tail -n 2 $OUT/conformance.log
grep -E "SUMMARY|rc |^\{" $OUT/san.log | cut -c1-400
el timing
for r in kda gdn2; do [ $(left) -gt 10 ] || break; timeout 25 $B/ab_$r >> $OUT/ab.jsonl 2>&1 || echo "ab $r rc $?" >> $OUT/ab.jsonl; done
cat $OUT/ab.jsonl
el bench
for rb in kda:8 kda:1; do [ $(left) -gt 6 ] || break; LINEA_BENCH_BACKWARD=$rb timeout 12 $B/bench --backward >> $OUT/bench.jsonl 2>&1; done; grep backward $OUT/bench.jsonl
el done
