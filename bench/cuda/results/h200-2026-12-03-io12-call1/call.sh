#!/usr/bin/env bash
set -u
G=.gpu/io12
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
( timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $G/io_ab --check > $OUT/memcheck.log 2>&1; echo "memcheck rc $?" >> $OUT/memcheck.log ) 
tail -3 $OUT/memcheck.log
timeout 200 $G/io_ab > $OUT/ab.jsonl 2>&1; echo "ab rc $?" >> $OUT/ab.jsonl
cat $OUT/ab.jsonl | cut -c1-900
