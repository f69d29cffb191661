#!/usr/bin/env bash
# dec5's second device call (#13): refactored decode_kernel vs main's verbatim vs the pipelined kernel, every rule,
# row b = state b / permuted / in order / neighbours swapped, 3 rounds interleaved (copy each round).
set -u
cd "$(dirname "$0")"
START=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv > $OUT/gpu.txt 2>&1
tar -xJf bins.tar.xz || { echo "unpack failed"; exit 1; }
timeout 90 ./linea_cuda_bench --decode-variants > $OUT/variants2.jsonl 2> $OUT/variants2.err; echo "variants rc $?"
python3 summarize.py $OUT/variants2.jsonl; tail -2 $OUT/variants2.err
echo "done at $(( $(date +%s) - START )) s"
