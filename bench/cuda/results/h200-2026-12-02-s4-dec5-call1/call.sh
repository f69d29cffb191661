#!/usr/bin/env bash
# dec5's device call (#13): the decode variants (3 rounds, copy each round), the library's decode, the tests of the
# decode kernels and of context parallelism's workspace lock, memcheck / racecheck on them.
set -u
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
left() { [ $(( $(date +%s) - START )) -lt $1 ]; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv > $OUT/gpu.txt 2>&1
el unpack
tar -xJf bins.tar.xz || { echo "unpack failed"; exit 1; }
el variants
timeout 45 ./linea_cuda_bench --decode-variants > $OUT/variants.jsonl 2> $OUT/variants.err; echo "variants rc $?"
python3 summarize.py $OUT/variants.jsonl; tail -2 $OUT/variants.err
el decode
timeout 15 ./linea_cuda_bench --decode-only > $OUT/decode.jsonl 2>&1; echo "decode rc $?"; cat $OUT/decode.jsonl
el tests
T="-tc=*decode*,*pipelined*,*partial*,CUDA context parallel*,cuda::launch*"
timeout 60 ./linea_cuda_tests "$T" > $OUT/tests.log 2>&1; echo "tests rc $?"
grep -E "test cases|assertions" $OUT/tests.log; grep -B2 -A14 "ERROR" $OUT/tests.log | head -60
el memcheck-decode
left 125 && { timeout 30 compute-sanitizer --tool memcheck ./linea_cuda_tests "-tc=cuda: the pipelined decode kernel*,cuda: the decode kernel*" > $OUT/memcheck_decode.log 2>&1; echo "memcheck decode rc $?"; grep -E "ERROR SUMMARY|test cases" $OUT/memcheck_decode.log; }
el memcheck-cp
left 140 && { timeout 30 compute-sanitizer --tool memcheck ./linea_cuda_tests "-tc=CUDA context parallel: the*" > $OUT/memcheck_cp.log 2>&1; echo "memcheck cp rc $?"; grep -E "ERROR SUMMARY|test cases" $OUT/memcheck_cp.log; }
el racecheck-decode
left 150 && { timeout 25 compute-sanitizer --tool racecheck ./linea_cuda_tests "-tc=cuda: the pipelined decode kernel*" > $OUT/racecheck_decode.log 2>&1; echo "racecheck rc $?"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|test cases" $OUT/racecheck_decode.log; }
el done
