#!/usr/bin/env bash
# bwd8's device call (#14, one call): the backward's products at the input type's precision (block_gemm.hpp's
# precision_for: 3xTF32 for float32 inputs, one TF32 mma for bf16 / fp16).
#  - build on the device (16 cores, sm_90a): the 7 instance units, main.cu + backward_test.cu, bench_cuda.cu, the
#    conformance runner, and grad_ab once per rule (-DGRAD_AB_RULE, extern instances), all in parallel;
#  - side by side: the backward test cases with LINEA_BACKWARD_ERRORS=1, the conformance runner, memcheck on
#    grad_ab --check (gated_delta, gdn2, simple_gla: both precisions, both Wide choices) and on "bf16 over 32 chunks";
#  - alone: grad_ab per rule at 8x4096 and 1x32768 (library = one TF32 mma for bf16 vs the same launches in 3xTF32,
#    main's arithmetic: distances, whole and per-phase times), then linea_cuda_bench --backward.
# Run from the repository root: LIMIT=280 bash .gpu/bwd8/bench/cuda/results/h200-2026-12-02-s5-bwd8-scripts/call.sh
set -u
R=$(cd "$(dirname "$0")/../../../.." && pwd)   # .gpu/bwd8
cd $R
export PATH=/usr/local/cuda/bin:$PATH
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s"; }
left() { echo $(( ${LIMIT:-300} - ($(date +%s) - S) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
D=$(cd ../deps && pwd); C=$(cd ../conformance && pwd); B=/tmp/b; mkdir -p $B
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
RULES="gated_delta delta simple_gla additive kda gla gdn2"
el build
{ for s in $R/tests/backend/cuda/instances/*.cu; do echo "I $s x"; done
  for s in $R/tests/backend/cuda/backward_test.cu $R/tests/backend/cuda/main.cu $R/bench/cuda/bench_cuda.cu $R/tools/linea_cuda_conformance.cu; do echo "E $s x"; done
  for r in $RULES; do echo "A $R/bench/cuda/grad_ab.cu $r"; done; } |
  xargs -P 16 -L 1 sh -c 'case $1 in I) o='$B'/$(basename "$2" .cu).inst.o; d="";; E) o='$B'/$(basename "$2" .cu).o; d=-DLINEA_CUDA_EXTERN_INSTANCES;; A) o='$B'/grad_ab_$3.o; d="-DLINEA_CUDA_EXTERN_INSTANCES -lineinfo -DGRAD_AB_RULE=linea::$3";; esac; t=$(date +%s); nvcc '"$FL"' $d -c "$2" -o "$o" || echo "FAILED: $2 $3"; echo "$(( $(date +%s) - t )) s $2 $3"' _ > $OUT/build.log 2>&1
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $B/main.o $B/backward_test.o $B/*.inst.o -o $B/tests; $L $B/bench_cuda.o $B/*.inst.o -o $B/bench
$L $B/linea_cuda_conformance.o $B/*.inst.o -o $B/conf
for r in $RULES; do $L $B/grad_ab_$r.o $B/*.inst.o -o $B/ab_$r; done
grep -E "FAILED|error|spill|[0-9] s " $OUT/build.log | cut -c1-220 | head -40
ls $B/tests $B/bench $B/conf $B/ab_* 2>&1 | tr '\n' ' '; echo
el checks
T=$B/tests
(LINEA_BACKWARD_ERRORS=1 timeout 100 $T > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log) &
(timeout 70 $B/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log) &
(for r in gated_delta gdn2 simple_gla; do timeout 30 compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_$r --check > /tmp/mc_$r.log 2>&1; echo "memcheck grad_ab --check $r rc $?"; grep -E "ERROR SUMMARY" /tmp/mc_$r.log; done > /tmp/san1.log 2>&1) &
(timeout 80 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=CUDA backward: bf16 over 32*" > /tmp/san2.log 2>&1; echo "memcheck bf16-32-chunks rc $?" >> /tmp/san2.log) &
wait
cat /tmp/san1.log > $OUT/san.log; grep -E "ERROR SUMMARY|test cases|rc " /tmp/san2.log >> $OUT/san.log
grep -E "ERROR|FAILED|test cases|assertions|rc " $OUT/tests.log | head -30
echo "worst error per input type (LINEA_BACKWARD_ERRORS lines: label what err):"
for ty in float32 bf16 fp16; do grep -E " $ty .*e[-+][0-9]+$" $OUT/tests.log | awk '{v = $NF + 0; if (v > m) {m = v; l = $0}} END {print "worst:", l}'; done
grep -E '^FAIL' $OUT/conformance.log | head; echo "backward lines: $(grep -c backward $OUT/conformance.log)"; tail -n 3 $OUT/conformance.log
cat $OUT/san.log
el grad_ab
for r in $RULES; do [ $(left) -gt 60 ] || break; timeout 25 $B/ab_$r --check >> $OUT/ab_check.jsonl 2>&1; timeout 30 $B/ab_$r >> $OUT/ab.jsonl 2>&1 || echo "ab $r rc $?"; done
cat $OUT/ab_check.jsonl | cut -c1-400; cat $OUT/ab.jsonl
el bench
[ $(left) -gt 20 ] && { timeout $(( $(left) - 10 )) $B/bench --backward > $OUT/bench.jsonl 2>&1; echo "bench rc $?"; cat $OUT/bench.jsonl; }
el done
