#!/usr/bin/env bash
# Lead's third device call (2026-12-02, session 3): (1) the segments test fixed after call 1; (2) issue #16's torch
# path against bench/cuda interleaved (bench/cuda, then the Python rows, three times: the same clocks for both);
# (3) peer1's FlashInfer GDN prefill beside linea's bench in the same call.
# Binaries: the CI dry run's CMake build of the merged tree (liblinea_cuda_instances.a, PIC) and segments_test.cu,
# main.cu, bench_cuda.cu compiled on the CPU machine with nvcc 13 (sm_90a), linked here.
set -u
cd "$(dirname "$0")"
F=$PWD; R=$(cd ../.. && pwd)
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader
S=/tmp/fisite; mkdir -p $S
(tar -xJf ../peer1/fi_site.tar.xz -C $S && tar -xJf ../peer1/cutlass_so.tar.xz -C $S; echo "fi unpack rc $?") > $OUT/fi_unpack.log 2>&1 &
mkdir -p bg && tar -xJf bins.tar.xz -C bg && tar -xJf deps.tar.xz -C .. && tar -xJf nanobind.tar.xz -C $F && ln -sfn $F/nanobind $R/nanobind
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L bg/segments_test.o bg/main.o bg/liblinea_cuda_instances.a -o bg/segments_tests && $L bg/bench_cuda.o bg/liblinea_cuda_instances.a -o bg/linea_cuda_bench && $L bg/segments_bench_s3.o bg/liblinea_cuda_instances.a -o bg/linea_segments_bench
ls bg | tr '\n' ' '; echo
el module-bg
(cd $R && bash $F/device_build.sh > $OUT/python_build.log 2>&1; echo "module build rc $?" >> $OUT/python_build.log) &
BUILD=$!
el segments-test
timeout 60 bg/segments_tests > $OUT/segments_tests.log 2>&1; echo "segments tests rc $?"
grep -E "ERROR|FAILED|test cases|assertions" $OUT/segments_tests.log | head
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 bg/segments_tests "-tc=CUDA context parallel: the scratch*" > $OUT/segments_memcheck.log 2>&1; echo "memcheck rc $?"; grep -E "ERROR SUMMARY|test cases" $OUT/segments_memcheck.log
wait $BUILD; tail -2 $OUT/python_build.log
el interleaved
cd $R
for r in 1 2 3; do
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
  timeout 40 $F/bg/linea_cuda_bench --chunk-only --v128-only --no-ccq > $OUT/cpp_$r.jsonl 2>&1; echo "bench rc $?"
  PYTHONPATH=$PWD/python timeout 90 python3 bench/python_overhead.py --large-only --rounds 2 \
    --cpp $OUT/cpp_$r.jsonl > $OUT/python_large_$r.md 2>&1; echo "python rc $?"
  grep -E "^\| (linear_attn|simple_gla|gla|delta_rule|gated_delta_rule|kda|gdn2) " $OUT/python_large_$r.md | cut -d'|' -f1-3,7-10
done
el flashinfer
wait; cat $OUT/fi_unpack.log
cd $F/../peer1
export PYTHONPATH=$S:$S/nvidia_cutlass_dsl/dsl_packages PYTHONUNBUFFERED=1
CHECK="5x300 1x1000" SHAPES="8x4096 1x32768 2x16384" WARMUP=3 REPS=10 ROUNDS=3 timeout ${FI_CAP:-100} \
  python3 -W ignore flashinfer_bench.py > $OUT/flashinfer.jsonl 2> $OUT/flashinfer.err; echo "flashinfer rc $?"
cut -c1-400 $OUT/flashinfer.jsonl; tail -c 1500 $OUT/flashinfer.err
el linea-long
timeout ${LONG_CAP:-60} $F/bg/linea_segments_bench --long > $OUT/segments_long.jsonl 2>&1; echo "segments long rc $?"
grep -E 'gated_delta' $OUT/segments_long.jsonl | cut -c1-300 | head -12
el done
