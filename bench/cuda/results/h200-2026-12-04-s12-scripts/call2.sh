#!/usr/bin/env bash
# Session 12, call 2 (carry .gpu/s12; binaries of the merged tree from a CMake build on the CPU machine, xz'd, and the
# conformance vectors): the final tree — pko's and pko2's sector stores merged, the direct-gradients test comparing
# the atomics' sums within an ulp.
#   1. side by side: the suite; memcheck of the two new backward cases, racecheck of per_key_grad / chunk_grad16 on the
#      direct-gradients case; conformance fla + linea; the fuzz driver (known cases, then a fresh seed's 400)
#   2. alone: linea_cuda_bench --backward (every rule with a CUDA backward, 8×4096 and 1×32768)
# Writes under $OUT: tests.log, conformance.log, checks.txt, bench_backward.jsonl.
set -u
S=.gpu/s12; B=/tmp/s12; mkdir -p $B/conf
for f in linea_cuda_tests linea_cuda_conformance linea_cuda_bench cuda_fuzz; do
  [ -e $S/$f.xz ] && { xz -dc $S/$f.xz > $B/$f && chmod +x $B/$f; }; done
tar xJf $S/conf.tar.xz -C $B/conf
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T=$B/linea_cuda_tests; C=$B/conf/conformance
( timeout 220 $T > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
( timeout 150 $B/linea_cuda_conformance $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
i=0
for tc in "*in-kernel L2 norm*adjoint where*" "*phase 4 writes dq*"; do i=$((i + 1))
  ( timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=$tc" > /tmp/mc$i.log 2>&1
    echo "memcheck [$tc] rc $?" >> /tmp/mc$i.log ) & done
for k in per_key_grad chunk_grad16; do i=$((i + 1))
  ( timeout 200 compute-sanitizer --tool racecheck --kernel-regex kns=$k --error-exitcode 9 $T "-tc=*phase 4 writes dq*" > /tmp/mc$i.log 2>&1
    echo "racecheck [$k | phase 4 writes dq] rc $?" >> /tmp/mc$i.log ) & done
[ -x $B/cuda_fuzz ] && ( for c in ${FUZZ_CASES:-1303 2431 212 2518 418}; do timeout 25 $B/cuda_fuzz --seed 20261207 --from $c --to $((c + 1)) 2>&1 | grep '^RESULT' | cut -c1-300; done
  timeout 90 $B/cuda_fuzz --seed ${FUZZ_SEED:-20261241} --from 0 --to 400 --budget 80 > /tmp/fzr.log 2>&1; echo "fuzz seed ${FUZZ_SEED:-20261241} rc $?"
  grep '^RESULT' /tmp/fzr.log | awk '{print $3}' | sort | uniq -c; grep -E '^RESULT [0-9]+ (FAIL|ILLCOND)|^BUDGET' /tmp/fzr.log | cut -c1-300 | head -20
  grep -E '^RESULT' /tmp/fzr.log | grep -E ' l2' | grep -E 'K=1 ' | cut -c1-200 | head -8 ) > /tmp/fz.log 2>&1 &
wait
{ for f in /tmp/mc*.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:|assertions:|rc " $f | cut -c1-400; done
  echo "-- fuzz"; cat /tmp/fz.log 2>/dev/null; } > $OUT/checks.txt 2>&1
grep -E "ERROR|FAILED|test cases|assertions|skipped|rc " $OUT/tests.log | head -20
grep -B3 -A12 -E "ERROR:|FAILED" $OUT/tests.log | head -60
grep -E '^FAIL' $OUT/conformance.log | head; tail -n 3 $OUT/conformance.log
cat $OUT/checks.txt
# 2. alone on the GPU
timeout 150 $B/linea_cuda_bench --backward > $OUT/bench_backward.jsonl 2>&1; echo "bench rc $?" >> $OUT/bench_backward.jsonl
grep -E '"kind":"(backward|device)"|rc ' $OUT/bench_backward.jsonl
date
