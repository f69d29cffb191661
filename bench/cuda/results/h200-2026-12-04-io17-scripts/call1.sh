#!/usr/bin/env bash
# io17 (issue #14), device call 1: the additive fast path reading and writing the caller's tensors (direct) against
# addbwd16's path through phases 0 and 5. Build the instance units, backward_test.cu + main.cu and
# bench/cuda/add16_ab.cu; the A/B timings first (alone on the GPU), then side by side: the suite's "CUDA backward*"
# cases (errors printed: LINEA_BACKWARD_ERRORS), memcheck + racecheck (kns=add16) of the direct path's small case,
# memcheck of add16_ab --check; last, ncu of the add16 kernels (simple_gla 8×4096, old and new, one each).
# Run in the repository root with $OUT set; carry .gpu/io17 and .gpu/deps.
set -u
R=$(pwd); G=$R/.gpu
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s); LIMIT=${LIMIT:-250}
el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a "$OUT/build.txt"; }
left() { echo $(( LIMIT - ($(date +%s) - START) )); }
B=/tmp/io17; mkdir -p $B/obj
export FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$G/deps -I$G/deps/eigen3"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader >> "$OUT/build.txt" 2>&1
el build
{ for s in tests/backend/cuda/instances/*.cu; do echo "I $R/$s"; done
  for s in tests/backend/cuda/backward_test.cu tests/backend/cuda/main.cu bench/cuda/add16_ab.cu; do echo "E $R/$s"; done; } |
  timeout 200 xargs -P 16 -L 1 sh -c '
    n=$(basename "$2" .cu); [ "$1" = I ] && n="$n.inst"; o="$0/obj/$n.o"
    d=-DLINEA_CUDA_EXTERN_BACKWARD_PHASES; [ "$1" = E ] && d="$d -DLINEA_CUDA_EXTERN_INSTANCES"
    nvcc $FLAGS $d -c "$2" -o "$o" > "$o.log" 2>&1 || echo "FAILED: $2"' $B >> "$OUT/build.txt" 2>&1
grep -h "spill" $B/obj/*.log | grep -i add16 | head -5 >> "$OUT/build.txt"
grep -h -E "error" $B/obj/*.log | head -20 >> "$OUT/build.txt"
el link
I=$(ls $B/obj/*.inst.o)
nvcc -gencode=arch=compute_90a,code=sm_90a $B/obj/backward_test.o $B/obj/main.o $I -o $B/tests >> "$OUT/build.txt" 2>&1 &
nvcc -gencode=arch=compute_90a,code=sm_90a $B/obj/add16_ab.o $I -o $B/ab >> "$OUT/build.txt" 2>&1 &
wait
el timing  # first, alone on the GPU
timeout 60 $B/ab > "$OUT/add16_ab.jsonl" 2>&1; echo "ab rc $?" >> "$OUT/add16_ab.jsonl"; cat "$OUT/add16_ab.jsonl"
el checks
T=$B/tests
SM='CUDA backward: the additive fast path direct at small*'
( LINEA_BACKWARD_ERRORS=1 timeout $(( $(left) - 40 )) $T '-tc=CUDA backward*' > "$OUT/tests.log" 2>&1; echo "tests rc $?" >> "$OUT/tests.log" ) &
( timeout $(( $(left) - 40 )) compute-sanitizer --tool memcheck --kernel-regex kns=add16 --error-exitcode 9 $T "-tc=$SM" > /tmp/io17_mc.log 2>&1; echo "memcheck rc $?" >> /tmp/io17_mc.log ) &
( timeout $(( $(left) - 40 )) compute-sanitizer --tool racecheck --kernel-regex kns=add16 --error-exitcode 9 $T "-tc=$SM" > /tmp/io17_rc.log 2>&1; echo "racecheck rc $?" >> /tmp/io17_rc.log ) &
( timeout $(( $(left) - 40 )) compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab --check > /tmp/io17_mc2.log 2>&1; echo "memcheck ab --check rc $?" >> /tmp/io17_mc2.log ) &
wait
{ for f in /tmp/io17_mc.log /tmp/io17_rc.log /tmp/io17_mc2.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:|assertions:|rc |kind|Invalid|Race|Error" $f | head -30; done; } > "$OUT/checks.txt" 2>&1
grep -E "ERROR|FAILED|test cases|assertions|rc " "$OUT/tests.log" | head -30
cat "$OUT/checks.txt"
el ncu
timeout $(( $(left) - 3 )) ncu --set full -k regex:add16 -c 6 $B/ab --profile > "$OUT/ncu.txt" 2>&1; echo "ncu rc $?" >> "$OUT/ncu.txt"
grep -E "add16|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Achieved Occupancy|Registers Per|ncu rc" "$OUT/ncu.txt" | head -80
el done
