#!/usr/bin/env bash
# addbwd16 (issue #14), device call 2: the per-chunk kernel at two CTAs an SM (A formed again over dP's tile; the
# dot products of d log α from the bf16 tiles). Build only what bench/cuda/add16_ab.cu links (the additive and
# simple_gla instance units, the phase launchers); the A/B timings first, then add16_ab --check (distances to the old
# path, small odd shapes, two under extreme gates) under memcheck and racecheck (kns=add16) and plain.
set -u
R=$(pwd); G=$R/.gpu
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s); LIMIT=${LIMIT:-140}
el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a "$OUT/build.txt"; }
left() { echo $(( LIMIT - ($(date +%s) - START) )); }
B=/tmp/addbwd16; mkdir -p $B/obj
export FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$G/deps -I$G/deps/eigen3"
el build
{ for s in additive simple_gla backward_phases backward_phases_per_key; do echo "I $R/tests/backend/cuda/instances/$s.cu"; done
  echo "E $R/bench/cuda/add16_ab.cu"; } |
  timeout 120 xargs -P 16 -L 1 sh -c '
    n=$(basename "$2" .cu); [ "$1" = I ] && n="$n.inst"; o="$0/obj/$n.o"
    d=-DLINEA_CUDA_EXTERN_BACKWARD_PHASES; [ "$1" = E ] && d="$d -DLINEA_CUDA_EXTERN_INSTANCES"
    nvcc $FLAGS $d -c "$2" -o "$o" > "$o.log" 2>&1 || echo "FAILED: $2"' $B >> "$OUT/build.txt" 2>&1
grep -h -E "error" $B/obj/*.log | head -20 >> "$OUT/build.txt"
el link
nvcc -gencode=arch=compute_90a,code=sm_90a $B/obj/add16_ab.o $B/obj/*.inst.o -o $B/ab >> "$OUT/build.txt" 2>&1
el timing
timeout 30 $B/ab > "$OUT/add16_ab.jsonl" 2>&1; echo "ab rc $?" >> "$OUT/add16_ab.jsonl"; cat "$OUT/add16_ab.jsonl"
el checks
( timeout $(( $(left) - 3 )) $B/ab --check > "$OUT/check.jsonl" 2>&1; echo "ab --check rc $?" >> "$OUT/check.jsonl" ) &
( timeout $(( $(left) - 3 )) compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab --check > /tmp/addbwd16_mc.log 2>&1; echo "memcheck ab --check rc $?" >> /tmp/addbwd16_mc.log ) &
( timeout $(( $(left) - 3 )) compute-sanitizer --tool racecheck --kernel-regex kns=add16 --error-exitcode 9 $B/ab --check > /tmp/addbwd16_rc.log 2>&1; echo "racecheck ab --check rc $?" >> /tmp/addbwd16_rc.log ) &
wait
{ for f in /tmp/addbwd16_mc.log /tmp/addbwd16_rc.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|rc |Invalid|Race|Error" $f | head -20; done; } > "$OUT/checks.txt" 2>&1
cat "$OUT/check.jsonl" "$OUT/checks.txt"
el done
