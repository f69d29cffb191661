#!/usr/bin/env bash
# add18's device call (issue #14): objects built on the workstation (build_local.sh: the additive, simple_gla and
# backward_phases instance units, main.cu, add18_backward16_test.cu, bench/cuda/add16_ab.cu; pack.sh). In the
# repository root with $OUT set; carry .gpu/add18 and .gpu/peers16:
#   cd .gpu/add18 && bash bench/cuda/results/h200-2026-12-04-add18-scripts/call1.sh
#  1. link; add16_ab (old = main's kernels, new = the library), alone on the GPU
#  2. side by side: fla's Triton compiles for linear_attn (PEERS_WARM=1, no timing), the trimmed suite
#     (LINEA_BACKWARD_ERRORS=1), memcheck + racecheck (kns=add16) of the suite's small direct case and of the new
#     width case, memcheck of add16_ab --check
#  3. fla's linear_attn forward and forward + backward (8×4096, 1×32768) alone on the GPU (autotuning on an idle GPU)
set -u
R=$(pwd); B=/tmp/add18; mkdir -p $B/o
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s); LIMIT=${LIMIT:-190}
el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a "$OUT/log.txt"; }
left() { echo $(( LIMIT - ($(date +%s) - START) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> "$OUT/log.txt" 2>&1
for f in objs/*.o.xz; do xz -dc $f > $B/o/$(basename $f .xz) & done
PEERS=$R/../peers16; SITE=/tmp/peers_site; mkdir -p $SITE
( tar -xJf $PEERS/peers_site.tar.xz -C $SITE ) &
wait
el unpacked
I="$B/o/backward_phases.inst.o $B/o/additive.inst.o $B/o/simple_gla.inst.o"
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $B/o/add16_ab.o $I -o $B/ab >> "$OUT/log.txt" 2>&1 &
$L $B/o/add18_backward16_test.o $B/o/main.o $I -o $B/t >> "$OUT/log.txt" 2>&1 &
wait
el linked
timeout 60 $B/ab > "$OUT/add16_ab.jsonl" 2>&1; echo "ab rc $?" >> "$OUT/add16_ab.jsonl"
el timed
export PYTHONPATH=$SITE PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/peers_cache/triton
( PEERS=fla RULES=linear_attn FLA_SHAPES="8x4096 1x32768" PEERS_WARM=1 timeout $(( $(left) - 40 )) python3 bench/cuda/peers_train_bench.py \
    > $B/warm.jsonl 2> $B/warm.err; echo "warm rc $?" >> $B/warm.jsonl ) &
W=$!
TC=$(( $(left) - 45 )); [ $TC -gt 100 ] && TC=100; [ $TC -lt 20 ] && TC=20
SM='CUDA backward: the additive fast path direct at small shapes*'
NW='CUDA backward: the additive fast path at each state-tile width*'
P=""
( LINEA_BACKWARD_ERRORS=1 timeout $TC $B/t > $B/tests.log 2>&1; echo "tests rc $?" >> $B/tests.log ) & P="$P $!"
( timeout $TC compute-sanitizer --tool memcheck --kernel-regex kns=add16 --error-exitcode 9 $B/t "-tc=$SM" > $B/mc.log 2>&1; echo "memcheck small rc $?" >> $B/mc.log ) & P="$P $!"
( timeout $TC compute-sanitizer --tool racecheck --kernel-regex kns=add16 --error-exitcode 9 $B/t "-tc=$SM" > $B/rc.log 2>&1; echo "racecheck small rc $?" >> $B/rc.log ) & P="$P $!"
( timeout $TC compute-sanitizer --tool memcheck --kernel-regex kns=add16 --error-exitcode 9 $B/ab --check > $B/mc2.log 2>&1; echo "memcheck ab --check rc $?" >> $B/mc2.log ) & P="$P $!"
( timeout $TC compute-sanitizer --tool racecheck --kernel-regex kns=add16 --error-exitcode 9 $B/t "-tc=$NW" > $B/rc2.log 2>&1; echo "racecheck widths rc $?" >> $B/rc2.log ) & P="$P $!"
wait $P
el checked
cp $B/tests.log "$OUT/tests.log"
{ for f in $B/mc.log $B/rc.log $B/mc2.log $B/rc2.log; do echo "--- $(basename $f)";
    grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:|assertions:|rc |kind|Invalid|Race|Error|hazard" $f | head -40; done; } > "$OUT/checks.txt" 2>&1
grep -E "ERROR|FAILED|test cases|assertions|rc " "$OUT/tests.log" | head -20
cat "$OUT/checks.txt"
wait $W; cat $B/warm.jsonl | grep -v TileLang > "$OUT/fla_warm.jsonl"; tail -5 $B/warm.err >> "$OUT/fla_warm.jsonl"
el warmed
c=$(( $(left) - 3 )); [ $c -gt 90 ] && c=90
if [ $c -gt 25 ]; then
  PEERS=fla RULES=linear_attn FLA_SHAPES="8x4096 1x32768" OP_CAP=60 timeout $c python3 bench/cuda/peers_train_bench.py \
    > "$OUT/fla.jsonl" 2> $B/fla.err; echo "fla rc $?" >> "$OUT/fla.jsonl"; tail -5 $B/fla.err >> "$OUT/fla.jsonl"
else echo "fla: skipped, $c s left" >> "$OUT/fla.jsonl"; fi
cat "$OUT/fla.jsonl" | grep -v TileLang | cut -c1-400
el done
