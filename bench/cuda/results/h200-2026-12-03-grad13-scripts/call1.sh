#!/usr/bin/env bash
# grad13 call 1 (run tool, carry [".gpu/grad13"]): grad_ab for gated_delta and delta, inter_grad_kernel with the
# hi/lo split (3) and one bf16 product (1): --check distances, memcheck + racecheck, then timing alone.
set -u
B=.gpu/grad13/bin; chmod +x $B/* 2>/dev/null
L=$OUT/log.txt; S=$(date +%s)
t() { echo "[$(( $(date +%s) - S ))s] $*" >> $L; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >> $L 2>&1
for x in gd3 de3 gd1 de1; do echo "## $x" >> $OUT/check.jsonl; timeout 60 $B/grad_ab_$x --check >> $OUT/check.jsonl 2>&1; t "check $x rc=$?"; done
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
( timeout 110 $CS --tool memcheck $B/grad_ab_gd3 --check > $OUT/san.txt 2>&1; t "memcheck gd3 rc=$?" ) &
( timeout 110 $CS --tool memcheck $B/grad_ab_de3 --check > $OUT/san_de.txt 2>&1; t "memcheck de3 rc=$?" ) &
( timeout 110 $CS --tool racecheck --kernel-regex kns=grad_kernel $B/grad_ab_gd3 --check > $OUT/race.txt 2>&1; t "racecheck gd3 rc=$?" ) &
wait
for f in san san_de race; do tail -3 $OUT/$f.txt | sed "s/^/$f: /" >> $L; done
echo "## gd3" > $OUT/time.jsonl; timeout 60 $B/grad_ab_gd3 --long >> $OUT/time.jsonl 2>&1; t "time gd3 rc=$?"
for x in de3 gd1 de1; do echo "## $x" >> $OUT/time.jsonl; timeout 40 $B/grad_ab_$x >> $OUT/time.jsonl 2>&1; t "time $x rc=$?"; done
cat $L
