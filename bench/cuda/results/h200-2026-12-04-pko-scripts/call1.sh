#!/usr/bin/env bash
# pko call 1: the per-key forward's o / residual strips in full sectors (tiles::strip_store::sectors) against the
# pairs (main's form), binaries built on the workstation (build_local.sh) and carried xz'd in .gpu/pko/bin.
#   1. alone: perkey_ab --check — new (sectors) bit-identical to old (pairs) on o and the final state (60 cases:
#      kda, gdn2, gla; K 128 / 72; ordinary, extreme, mixed gates; in-kernel and misaligned gates), exact within
#      SPEC §5 of float64; outputs_ab: 15 cases of other output layouts and the residual, bit for bit over whole buffers
#   2. alone: perkey_ab --short (kernels launched directly, 8×4096 and 2×333, interleaved rounds); the library's
#      path at 8×4096 from two builds (perkey_ab_old: LINEA_PERKEY_PAIR_STORES) in alternating processes, 3 × 3 rounds
#   3. ncu (one launch of old and new a rule, 8×4096; --clock-control none): duration, global store requests and
#      sectors, L2 write sectors; cuobjdump: the 16-byte global stores in the kernels
#   4. side by side within LIMIT: the suite's per-key cases, compute-sanitizer memcheck + racecheck of
#      `perkey_ab --check` (PERKEY_CHECK=sanitize) and of the suite's per-key poison case
# Run from the repository root: bash .gpu/pko/call1.sh (carry .gpu/pko; timeout_s 300, LIMIT 280 by default).
set -u
R=$(pwd); P=$R/.gpu/pko; W=/tmp/pko; rm -rf $W; mkdir -p $W
export PATH=/usr/local/cuda/bin:$PATH
LIMIT=${LIMIT:-280}
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s" | tee -a "$OUT/checks.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$OUT/checks.txt" 2>&1
for b in perkey_ab perkey_ab_old tests; do xz -dc $P/bin/$b.xz > $W/$b && chmod +x $W/$b; done
ls -la $W >> "$OUT/checks.txt"

el check
( timeout 90 $W/perkey_ab --check > "$OUT/perkey_check.jsonl" 2>&1; echo "perkey_ab --check rc $?" >> "$OUT/perkey_check.jsonl" )
grep -E "check_summary|rc |\"pass\":false" "$OUT/perkey_check.jsonl" | cut -c1-300 | tee -a "$OUT/checks.txt"

el timing
( timeout 90 $W/perkey_ab --short > "$OUT/perkey_ab.jsonl" 2>&1; echo "perkey_ab --short rc $?" >> "$OUT/perkey_ab.jsonl" )
for i in 1 2 3; do
  ( timeout 40 $W/perkey_ab_old --lib | sed 's/^{/{"build":"pairs",/'; timeout 40 $W/perkey_ab --lib | sed 's/^{/{"build":"sectors",/' ) >> "$OUT/lib.jsonl" 2>&1
done
el ncu
M=gpu__time_duration.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,lts__t_sectors_op_write.sum,dram__bytes_write.sum,smsp__inst_executed_op_global_st.sum
timeout 60 ncu --clock-control none -k regex:perkey_delta_kernel --metrics $M --csv $W/perkey_ab --once > "$OUT/ncu.csv" 2> $W/ncu.err; echo "ncu rc $?" >> "$OUT/checks.txt"
tail -3 $W/ncu.err >> "$OUT/checks.txt"
timeout 30 cuobjdump -sass $W/perkey_ab 2>/dev/null | awk '/Function : .*perkey_delta_kernel/ {f=$3} /STG/ && f {n[f" "$2]++} END {for (k in n) print n[k], k}' | sort -k2 > $W/sass_stg.txt
echo "STG count, kernel, width (cuobjdump -sass):" >> "$OUT/checks.txt"; cut -c1-40,150- $W/sass_stg.txt >> "$OUT/checks.txt"

el sanitizers+suite
T=$(( LIMIT - ($(date +%s) - S) - 10 )); [ $T -gt 200 ] && T=200; echo "(each step ≤ $T s)" >> "$OUT/checks.txt"
if [ $T -gt 20 ]; then
TC=${SUITE_TC:-*kda*,*gdn2*,*gla*,*per-key*,*partial tiles*,*qk_l2norm*,*-inf*,*poisons*,*states only*,*sanitize*}
POISON="cuda: a NaN or inf input poisons only what the recurrence poisons (delta and per-key pipelines)"
( timeout $T $W/tests "-tc=$TC" > "$OUT/tests.log" 2>&1; echo "tests rc $?" >> "$OUT/tests.log" ) &
( PERKEY_CHECK=sanitize timeout $T compute-sanitizer --tool memcheck --error-exitcode 9 $W/perkey_ab --check > $W/mc1.log 2>&1; echo "memcheck perkey_ab --check (sanitize subset) rc $?" >> $W/mc1.log ) &
( PERKEY_CHECK=sanitize timeout $T compute-sanitizer --tool racecheck --kernel-regex kns=perkey_delta_kernel --error-exitcode 9 $W/perkey_ab --check > $W/mc2.log 2>&1; echo "racecheck perkey_ab --check (sanitize subset) rc $?" >> $W/mc2.log ) &
( timeout $T compute-sanitizer --tool racecheck --kernel-regex kns=perkey_delta --error-exitcode 9 $W/tests "-tc=$POISON" > $W/mc3.log 2>&1; echo "racecheck [perkey_delta | poison case] rc $?" >> $W/mc3.log ) &
( timeout $T compute-sanitizer --tool memcheck --error-exitcode 9 $W/tests "-tc=$POISON,cuda: partial value tiles (V = 100, K = 72), kda" > $W/mc4.log 2>&1; echo "memcheck [poison, partial value tiles kda] rc $?" >> $W/mc4.log ) &
wait
for f in $W/mc*.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:|rc |check_summary" $f | cut -c1-300; grep -h -E "Hazard|Invalid|\"pass\":false" $f | head -5 | cut -c1-300; done >> "$OUT/checks.txt"
cat $W/mc*.log | xz > "$OUT/sanitizers.log.xz"
grep -E "test cases|assertions|rc " "$OUT/tests.log" >> "$OUT/checks.txt"
fi
el done
python3 $P/summary.py "$OUT" > "$OUT/summary.txt" 2>&1
cat "$OUT/checks.txt" "$OUT/summary.txt"
