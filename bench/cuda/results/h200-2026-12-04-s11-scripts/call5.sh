#!/usr/bin/env bash
# Session 11, call 5 (carry .gpu/s11bin: linea_cuda_tests of main 7bcc96e+ built by the CI dry run here, xz): the
# suite — with the caller-workspace overlap cases (errors_test.cu, backward_test.cu) — and memcheck of those cases.
set -u
B=/tmp/s11; mkdir -p $B
xz -dc .gpu/s11bin/linea_cuda_tests.xz > $B/t && chmod +x $B/t
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
( timeout 170 $B/t > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
( timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $B/t "-tc=*workspace overlapping an argument*" \
    > $OUT/memcheck.log 2>&1; echo "memcheck rc $?" >> $OUT/memcheck.log ) &
wait
grep -E "test cases|assertions|rc " $OUT/tests.log; grep -E "ERROR SUMMARY|test cases|rc " $OUT/memcheck.log
grep -B2 -A8 "ERROR\b\|FAILED\|failed" $OUT/tests.log | head -40
