#!/usr/bin/env bash
# prep9's device call (#14, one call, 240 s cap with the cold start): phase 1 of the per-key backward by 16 × 16 blocks.
#  - build on the device (16 cores, sm_90a), all in parallel: the 7 instance units, main.cu + backward_test.cu
#    (-split-compile=4: test code only, off the timed path), bench_cuda.cu, the conformance runner, and grad_ab for
#    kda, gdn2, gla with -DGRAD_AB_PREP_V0 (B side = main 16a7383's phase 1, per_key_prep_v0.hpp);
#  - alone first: grad_ab per rule at 8×4096 (below); then side by side: the backward test cases with LINEA_BACKWARD_ERRORS=1, the conformance runner, memcheck and
#    racecheck on grad_ab --check (kda, gdn2, gla: partial chunks, K = 64, V = 96, GVA; and 1 × 130);
#  - alone: grad_ab per rule at 8×4096 (new vs old phase 1: distances of every gradient, whole backward and phase 1
#    times, interleaved), then linea_cuda_bench --backward for kda and gla at 8×4096 (LINEA_BENCH_BACKWARD).
# Run from the repository root: LIMIT=200 bash .gpu/prep9/bench/cuda/results/h200-2026-12-02-s6-prep9-scripts/call.sh
set -u
R=$(cd "$(dirname "$0")/../../../.." && pwd)   # .gpu/prep9
cd $R
export PATH=/usr/local/cuda/bin:$PATH
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s" | tee -a $OUT/steps.txt; }
left() { echo $(( ${LIMIT:-200} - ($(date +%s) - S) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a $OUT/steps.txt
D=$(cd ../deps && pwd); C=$(cd ../conformance && pwd); B=/tmp/b; mkdir -p $B
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
RULES="kda gdn2 gla"
el build
{ echo "E $R/tests/backend/cuda/backward_test.cu x"
  for s in $R/tests/backend/cuda/instances/*.cu; do echo "I $s x"; done
  for s in $R/tests/backend/cuda/main.cu $R/bench/cuda/bench_cuda.cu $R/tools/linea_cuda_conformance.cu; do echo "E $s x"; done
  for r in $RULES; do echo "A $R/bench/cuda/grad_ab.cu $r"; done; } |
  xargs -P 16 -L 1 sh -c 'case $1 in I) o='$B'/$(basename "$2" .cu).inst.o; d="";; E) o='$B'/$(basename "$2" .cu).o; d=-DLINEA_CUDA_EXTERN_INSTANCES; [ $(basename $2) = backward_test.cu ] && d="$d -split-compile=4";; A) o='$B'/grad_ab_$3.o; d="-DLINEA_CUDA_EXTERN_INSTANCES -lineinfo -DGRAD_AB_PREP_V0 -DGRAD_AB_RULE=linea::$3";; esac; t=$(date +%s); nvcc '"$FL"' $d -c "$2" -o "$o" || echo "FAILED: $2 $3"; echo "$(( $(date +%s) - t )) s $2 $3"' _ > $OUT/build.log 2>&1
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $B/main.o $B/backward_test.o $B/*.inst.o -o $B/tests & $L $B/bench_cuda.o $B/*.inst.o -o $B/bench &
$L $B/linea_cuda_conformance.o $B/*.inst.o -o $B/conf &
for r in $RULES; do $L $B/grad_ab_$r.o $B/*.inst.o -o $B/ab_$r & done; wait
grep -E "FAILED|error|[0-9] s " $OUT/build.log | cut -c1-200 | head -30
ls $B/tests $B/bench $B/conf $B/ab_* 2>&1 | tr '\n' ' '; echo
el grad_ab
for r in $RULES; do [ $(left) -gt 12 ] || break; timeout 25 $B/ab_$r >> $OUT/ab.jsonl 2>&1 || echo "ab $r rc $?"; done
cat $OUT/ab.jsonl
el checks
W=$(( $(left) - 8 )); [ $W -gt 70 ] && W=70; [ $W -lt 10 ] && W=10
T=$B/tests
(LINEA_BACKWARD_ERRORS=1 timeout $W $T "-tc=CUDA backward*" > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log) &
(timeout $W $B/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log) &
for r in $RULES; do
  (timeout $W compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_$r --check > /tmp/mc_$r.log 2>&1; echo "memcheck grad_ab --check $r rc $?" >> /tmp/mc_$r.log) &
  (timeout $W compute-sanitizer --tool racecheck --error-exitcode 9 $B/ab_$r --check > /tmp/rc_$r.log 2>&1; echo "racecheck grad_ab --check $r rc $?" >> /tmp/rc_$r.log) &
done
wait
for r in $RULES; do cat /tmp/mc_$r.log; grep -E "SUMMARY|rc " /tmp/rc_$r.log; done > $OUT/san.log 2>&1
grep -E "ERROR|FAILED|test cases|assertions|rc " $OUT/tests.log | head -20
echo "worst error per input type (LINEA_BACKWARD_ERRORS lines: label what err):"
for ty in float32 bf16 fp16; do grep -E " $ty .*e[-+][0-9]+$" $OUT/tests.log | awk '{v = $NF + 0; if (v > m) {m = v; l = $0}} END {print "worst:", l}'; done
grep -E '^FAIL' $OUT/conformance.log | head; echo "backward lines: $(grep -c backward $OUT/conformance.log)"; tail -n 2 $OUT/conformance.log
grep -E "SUMMARY|rc |^\{" $OUT/san.log | cut -c1-300
el bench
for rb in kda:8 gla:8; do [ $(left) -gt 8 ] || break; LINEA_BENCH_BACKWARD=$rb timeout 12 $B/bench --backward >> $OUT/bench.jsonl 2>&1; done; grep backward $OUT/bench.jsonl
el done
