#!/usr/bin/env bash
# norm1's one H200 call (2026-12-02, session 5): binaries built on the host (nvcc 13, sm_90a, -O3), carried in
# .gpu/norm1/: bwd_tests = tests/backend/cuda/{main,backward_test}.cu; fwd_tests = main.cu + rules_test.cu's new
# "normaliser on the 64-token kernel" case (alone); norm_bench = bench/cuda/results/h200-2026-12-02-s5-norm1-bench.cu.
cd .gpu/norm1 || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader || true
echo "== backward: normalize cases (-s: every check with its values)"
timeout 40 ./bwd_tests -tc="CUDA backward: normalize*" -s > $OUT/bwd_norm.log 2>&1; echo "rc=$?"
grep -E "err <= bound|values:|CHECK\( [0-9]" $OUT/bwd_norm.log | grep -oE "CHECK\( [0-9.e+-]+ <= [0-9.e+-]+ \)" | sort | uniq -c | sort -rn | head -40
tail -4 $OUT/bwd_norm.log
echo "== forward: normaliser on the 64-token kernel"
timeout 30 ./fwd_tests -s > $OUT/fwd_norm.log 2>&1; echo "rc=$?"
grep -oE "o error [0-9.e+-]+ state error [0-9.e+-]+|(bf16|fp16) [^\n]*l2" $OUT/fwd_norm.log | sort -u | head; tail -4 $OUT/fwd_norm.log
echo "== timing (8x4096, H=16, K=V=128, bf16)"
timeout 60 ./norm_bench 2>&1 | tee $OUT/bench.jsonl
echo "== compute-sanitizer memcheck: the normalize backward cases"
timeout 45 compute-sanitizer --tool memcheck --error-exitcode 9 ./bwd_tests -tc="CUDA backward: normalize*" > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"
tail -6 $OUT/memcheck.log
echo "== all backward tests"
timeout 40 ./bwd_tests > $OUT/bwd_all.log 2>&1; echo "rc=$?"; tail -4 $OUT/bwd_all.log
