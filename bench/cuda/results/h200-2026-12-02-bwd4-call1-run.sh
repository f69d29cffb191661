#!/usr/bin/env bash
# bwd4's device call: finish the build (objects prebuilt on the 2-core machine where present), backward tests,
# conformance (gradient lines), A/B backward bench (main's binary = fin2's, same backward code), ncu per phase,
# memcheck on the backward. Every step logs to $OUT and may fail alone.
set -u
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
C=$(cd ../conformance && pwd); D=$(cd ../deps && pwd)
mkdir -p obj bin base
[ -f objs.tar.gz ] && tar -xzf objs.tar.gz -C obj && ls obj
gunzip -c base_bench.gz > base/linea_cuda_bench && chmod +x base/linea_cuda_bench
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
F="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -Isrc/include -Isrc/tests -Isrc/tools -I$D -I$D/eigen3"
el build
for s in src/tests/backend/cuda/instances/*.cu; do
  o=obj/$(basename $s .cu).inst.o; [ -f $o ] || { timeout 260 nvcc $F -c $s -o $o > $o.log 2>&1 || echo "FAILED $s" & }
done
for s in src/bench/cuda/bench_cuda.cu src/tests/backend/cuda/backward_test.cu src/tests/backend/cuda/main.cu src/tools/linea_cuda_conformance.cu; do
  o=obj/$(basename $s .cu).o; [ -f $o ] || { timeout 260 nvcc $F -DLINEA_CUDA_EXTERN_INSTANCES -c $s -o $o > $o.log 2>&1 || echo "FAILED $s" & }
done
wait
cat obj/*.log 2>/dev/null | grep -E "error|states_kernel|grad_kernel|prep_kernel" | head -40 > $OUT/build.log
LINK="nvcc -gencode=arch=compute_90a,code=sm_90a"
INST=$(ls obj/*.inst.o)
$LINK obj/main.o obj/backward_test.o $INST -o bin/tests || echo "link tests failed"
$LINK obj/bench_cuda.o $INST -o bin/bench || echo "link bench failed"
$LINK obj/linea_cuda_conformance.o $INST -o bin/conf || echo "link conf failed"
ls bin
el bench
timeout 60 base/linea_cuda_bench --backward > $OUT/bench-main.jsonl 2>&1; echo "bench main rc $?"
timeout 60 bin/bench --backward > $OUT/bench-branch.jsonl 2>&1; echo "bench branch rc $?"
paste -d'\n' $OUT/bench-main.jsonl $OUT/bench-branch.jsonl | cut -c1-200
el tests
LINEA_BACKWARD_ERRORS=1 timeout 120 bin/tests > $OUT/tests.log 2>&1; echo "tests rc $?"
grep -E "ERROR|FAILED|test cases|assertions" $OUT/tests.log | head -30
el conformance
timeout 60 bin/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?"
grep -E '^FAIL' $OUT/conformance.log | head; grep -ci 'backward' $OUT/conformance.log; tail -n 2 $OUT/conformance.log
el ncu
for r in gated_delta_rule:1; do
  LINEA_BENCH_BACKWARD=$r timeout 40 ncu --metrics gpu__time_duration.sum,launch__registers_per_thread,launch__occupancy_limit_shared_mem,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed -k regex:"inputs_kernel|prep_kernel|states_kernel|grad_kernel|adjoint_kernel" -c 6 bin/bench --backward > $OUT/ncu-${r%%:*}_${r##*:}.txt 2>&1 || echo "ncu $r failed"
  grep -E "^  [a-z_]+.*kernel|gpu__time_duration" $OUT/ncu-${r%%:*}_${r##*:}.txt | cut -c1-110
done
el memcheck
timeout 45 compute-sanitizer --tool memcheck --error-exitcode 9 bin/tests "-tc=CUDA backward = float64*" -sce=fp16 > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"
grep -E "ERROR SUMMARY|test cases" $OUT/memcheck.log
el ncu2
for r in gated_delta_rule:8; do
  LINEA_BENCH_BACKWARD=$r timeout 40 ncu --metrics gpu__time_duration.sum,launch__registers_per_thread,launch__occupancy_limit_shared_mem,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed -k regex:"inputs_kernel|prep_kernel|states_kernel|grad_kernel|adjoint_kernel" -c 6 bin/bench --backward > $OUT/ncu-${r%%:*}_${r##*:}.txt 2>&1 || echo "ncu $r failed"
  grep -E "^  [a-z_]+.*kernel|gpu__time_duration" $OUT/ncu-${r%%:*}_${r##*:}.txt | cut -c1-110
done
el done
