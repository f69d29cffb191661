#!/usr/bin/env bash
# bwd6 call 2: build bwd6's tree on the device (instances + backward tests + bench + conformance, in parallel),
# backward tests, bench new vs baseline (CI build of 248b1d0) in one call, conformance, memcheck, ncu phase times.
set -u
cd "$(dirname "$0")"
F=$PWD
export PATH=/usr/local/cuda/bin:$PATH
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s"; }
mkdir -p bb && tar -xJf base_bins.tar.xz -C bb linea_cuda_bench
R=$F/src; D=$(cd ../deps && pwd); C=$(cd ../conformance && pwd); B=/tmp/b; mkdir -p $B
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
el build
{ for s in $R/tests/backend/cuda/instances/*.cu; do echo "I $s"; done; for s in $R/tests/backend/cuda/main.cu $R/tests/backend/cuda/backward_test.cu $R/bench/cuda/bench_cuda.cu $R/tools/linea_cuda_conformance.cu; do echo "E $s"; done; } |
  xargs -P 16 -L 1 sh -c 'o='$B'/$(basename "$2" .cu)$([ "$1" = I ] && echo .inst).o; d=$([ "$1" = E ] && echo -DLINEA_CUDA_EXTERN_INSTANCES); t=$(date +%s); nvcc '"$FL"' $d -c "$2" -o "$o" || echo "FAILED: $2"; echo "$(( $(date +%s) - t )) s $2"' _ > $OUT/build.log 2>&1
grep -E "FAILED|error|spill|[0-9] s " $OUT/build.log | head -30
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $B/main.o $B/backward_test.o $B/*.inst.o -o $B/tests && $L $B/bench_cuda.o $B/*.inst.o -o $B/bench && $L $B/linea_cuda_conformance.o $B/*.inst.o -o $B/conf; echo "link rc $?"
el checks
# tests, conformance and memcheck side by side (correctness only; the bench runs alone afterwards)
(LINEA_BACKWARD_ERRORS=1 timeout 120 $B/tests > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log) &
(timeout 60 $B/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log) &
(timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests "-tc=CUDA backward: one CTA*,CUDA backward: bf16 over 32*" > $OUT/memcheck.log 2>&1; echo "memcheck rc $?" >> $OUT/memcheck.log) &
wait
grep -E "ERROR|FAILED|test cases|assertions|rc " $OUT/tests.log | head -20
grep -E '^FAIL' $OUT/conformance.log | head; grep -c "backward" $OUT/conformance.log; tail -n 3 $OUT/conformance.log
grep -E "ERROR SUMMARY|test cases|rc " $OUT/memcheck.log
el bench
timeout 70 $B/bench --backward > $OUT/bench_new.jsonl 2>&1; echo "bench new rc $?"
timeout 80 bb/linea_cuda_bench --backward > $OUT/bench_base.jsonl 2>&1; echo "bench base rc $?"
cat $OUT/bench_new.jsonl $OUT/bench_base.jsonl | cut -c1-200
el ncu
LINEA_BENCH_BACKWARD=gated_delta_rule:8 timeout 30 ncu -k regex:"prep|states|grad" -c 4 --metrics gpu__time_duration.sum $B/bench --backward > $OUT/ncu_new.log 2>&1
LINEA_BENCH_BACKWARD=gated_delta_rule:1 timeout 30 ncu -k regex:"prep|states" -c 3 --metrics gpu__time_duration.sum $B/bench --backward > $OUT/ncu_new_long.log 2>&1
LINEA_BENCH_BACKWARD=kda:8 timeout 30 ncu -k regex:"prep|states" -c 3 --metrics gpu__time_duration.sum $B/bench --backward > $OUT/ncu_new_kda.log 2>&1
grep -hE "^  [a-z_]+.*\\(|gpu__time" $OUT/ncu_new*.log | sed -E "s/\\(linea::cuda_detail::bwd::work.*//" | cut -c1-120 | head -40
el done
