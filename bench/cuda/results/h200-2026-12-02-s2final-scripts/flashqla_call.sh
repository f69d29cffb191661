#!/usr/bin/env bash
# FlashQLA 0.1.3 (tilelang 0.1.15) beside linea's forward + backward bench, one call (no internet: site-packages
# unpacked from wheels downloaded on the CPU machine).
set -u
cd "$(dirname "$0")"
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
mkdir -p /tmp/fqsite bin && tar -xJf fq_site.tar.xz -C /tmp/fqsite && tar -xJf bench_only.tar.xz -C bin; el unpacked
timeout 60 bin/linea_cuda_bench --backward > $OUT/linea_backward.jsonl 2>&1; echo "linea bwd rc $?"; el linea
cd ../..
PYTHONPATH=/tmp/fqsite PEERS=flashqla SHAPES="8x4096 1x32768" timeout 180 python3 bench/cuda/peers_train_bench.py > $OUT/flashqla.jsonl 2> $OUT/flashqla.err; echo "flashqla rc $?"
el done
cat $OUT/flashqla.jsonl | cut -c1-300; tail -5 $OUT/flashqla.err | cut -c1-300
grep -h '"backward"' $OUT/linea_backward.jsonl | cut -c1-200
