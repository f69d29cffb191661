#!/usr/bin/env bash
# Session 15: session 13's prepared call 2 with two builds (base = main's defaults, all = the three switches on):
# s13_ab --long (the per-key passes and phase 4, both forms on one workspace, 8×4096 and 1×32768), then
# linea_cuda_bench --backward for kda, gdn2, gla at 8×4096 and 1×32768 (gated_delta 8×4096: the control, a path no
# switch touches), the four builds interleaved, two rounds. Writes under $OUT: s13_long.jsonl, ab.jsonl.
set -u
S=${S:-.gpu/s13b}; B=/tmp/s13; mkdir -p $B
for f in bench_all bench_base bench_passes bench_inter s13_ab; do  # (already there when call1.sh ran on this machine)
  [ -x $B/$f ] || { xz -dc $S/$f.xz > $B/$f && chmod +x $B/$f; }; done
timeout 200 $B/s13_ab --long > $OUT/s13_long.jsonl 2>&1; echo "s13_ab --long rc $?" >> $OUT/s13_long.jsonl
cat $OUT/s13_long.jsonl
for round in 1 2; do for bin in bench_base bench_all; do
  for r in kda:8 kda:1 gdn2:8 gdn2:1 gla:8 gla:1 gated_delta_rule:8; do
    LINEA_BENCH_BACKWARD=$r timeout 60 $B/$bin --backward 2>&1 | grep '"kind":"backward"' | sed "s/^{/{\"bin\":\"$bin\",\"round\":$round,/" >> $OUT/ab.jsonl
  done; done; done
cat $OUT/ab.jsonl
# per-kernel times of one backward (ncu, one metric, kernels serialised): where the time goes with the switches on
for r in gated_delta_rule:8 kda:8; do
  LINEA_BENCH_BACKWARD=$r timeout 60 ncu --csv --metrics gpu__time_duration.sum --kernel-name-base demangled -k regex:bwd:: -c 40 $B/bench_all --backward \
    > $OUT/ncu_${r%%:*}.csv 2> $OUT/ncu_${r%%:*}.err
  echo "ncu $r rc $?"; done
date
