#!/usr/bin/env bash
# pk18 call 3: gla's library path (linea::chunkwise, the cost model's piece, and whole) at 2×16384 and 1×32768 on this
# branch's kernel: `perkey_delta_ab --gla-long` (built here, carried xz'd in .gpu/pk18/bins/ab.xz).
set -u
W=/tmp/pk18; mkdir -p $W; xz -dc $PWD/.gpu/pk18/bins/ab.xz > $W/ab; chmod +x $W/ab
timeout 40 $W/ab --gla-long > $OUT/gla_long.jsonl 2>&1; echo "rc $?" >> $OUT/gla_long.jsonl
cat $OUT/gla_long.jsonl
