#!/usr/bin/env bash
# dec6's second device call (#13): decode_ab (main's decode kernel against Whole — the state's loads and stores back
# to back — alone and with the pool walk, every rule, four index modes, three interleaved rounds), then tiles_test.cu's
# decode cases and memcheck over them.
set -u
cd "$(dirname "$0")"
START=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv > $OUT/gpu.txt 2>&1
tar -xJf bins.tar.xz || { echo "unpack failed"; exit 1; }; [ -f tests.tar.xz ] && tar -xJf tests.tar.xz
timeout 45 ./decode_ab > $OUT/ab.jsonl 2> $OUT/ab.err; echo "decode_ab rc $? at $(( $(date +%s) - START )) s"
python3 summarize.py $OUT/ab.jsonl | tee $OUT/summary.txt; tail -3 $OUT/ab.err
timeout 20 ./decode_tests -tc='*decode*' > $OUT/tests.log 2>&1; echo "tests rc $?"; tail -4 $OUT/tests.log
timeout 50 compute-sanitizer --tool memcheck ./decode_tests -tc='*decode*' > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"
grep -E "ERROR SUMMARY|test cases|assertions" $OUT/memcheck.log | tail -3
echo "done at $(( $(date +%s) - START )) s"
