#!/usr/bin/env bash
# Session 12, call 3 (carry .gpu/s12: linea_cuda_tests and linea_cuda_conformance of the final tree from the CI dry
# run's build on the CPU machine, xz'd, and the conformance vectors): the review's fixes (half_bits for CUDA's own
# 16-bit types, the direct-gradients test's switch guard, NaN fill and packed subcase) on the H200.
# Writes under $OUT: tests.log, conformance.log, checks.txt.
set -u
S=.gpu/s12; B=/tmp/s12; mkdir -p $B/conf
for f in linea_cuda_tests linea_cuda_conformance; do xz -dc $S/$f.xz > $B/$f && chmod +x $B/$f; done
tar xJf $S/conf.tar.xz -C $B/conf
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T=$B/linea_cuda_tests; C=$B/conf/conformance
( timeout 220 $T > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
( timeout 150 $B/linea_cuda_conformance $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
( timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=*phase 4 writes dq*" > /tmp/mc1.log 2>&1
  echo "memcheck [phase 4 writes dq] rc $?" >> /tmp/mc1.log ) &
( LINEA_BWD_DIRECT_GRADS_OFF=1 timeout 200 $T "-tc=*phase 4 writes dq*,*CUDA backward = float64 reference backward (bf16*" > /tmp/mc2.log 2>&1
  echo "suite part with LINEA_BWD_DIRECT_GRADS_OFF=1 rc $?" >> /tmp/mc2.log ) &
wait
{ for f in /tmp/mc*.log; do grep -h -E "ERROR SUMMARY|test cases:|assertions:|rc " $f | cut -c1-400; done; } > $OUT/checks.txt 2>&1
grep -E "ERROR|FAILED|test cases|assertions|skipped|rc " $OUT/tests.log | head -20
grep -B3 -A12 -E "ERROR:|FAILED" $OUT/tests.log | head -60
grep -E '^FAIL' $OUT/conformance.log | head; tail -n 3 $OUT/conformance.log
cat $OUT/checks.txt
date
