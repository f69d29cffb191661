#!/usr/bin/env bash
# segA15 call 1: build the instance units, segments_test + rules_test + main, segments_bench; the suite's segmented
# and additive-rule cases; memcheck and racecheck of the new pass A's kernels on its test case; then the A/B
# (linea_segments_bench --passa) alone on the GPU. Run in the worktree copy's root (.gpu/deps linked).
set -u
R=$(pwd); G=$R/.gpu
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a "$OUT/build.txt"; }
B=/tmp/segA15; mkdir -p $B/obj
export FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$G/deps -I$G/deps/eigen3"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$OUT/build.txt" 2>&1
el build
{ for s in tests/backend/cuda/instances/*.cu; do echo "I $R/$s"; done
  for s in tests/backend/cuda/segments_test.cu tests/backend/cuda/rules_test.cu tests/backend/cuda/main.cu bench/cuda/segments_bench.cu; do echo "E $R/$s"; done; } |
  timeout 230 xargs -P 16 -L 1 sh -c '
    n=$(basename "$2" .cu); [ "$1" = I ] && n="$n.inst"; o="$0/obj/$n.o"
    d=-DLINEA_CUDA_EXTERN_BACKWARD_PHASES; [ "$1" = E ] && d="$d -DLINEA_CUDA_EXTERN_INSTANCES"
    nvcc $FLAGS $d -c "$2" -o "$o" > "$o.log" 2>&1 || echo "FAILED: $2"; echo "built $n at $(date +%s)"' $B >> "$OUT/build.txt" 2>&1
grep -h "spill" $B/obj/*.log | grep -i piece_state | sort | uniq -c >> "$OUT/build.txt"
el link
L="nvcc -gencode=arch=compute_90a,code=sm_90a"; I=$(ls $B/obj/*.inst.o)
$L $B/obj/segments_test.o $B/obj/rules_test.o $B/obj/main.o $I -o $B/t >> "$OUT/build.txt" 2>&1 &
$L $B/obj/segments_bench.o $I -o $B/sb >> "$OUT/build.txt" 2>&1 &
wait
grep -h -E "error|FAILED" "$OUT/build.txt" $B/obj/*.log | head -12
el checks
TC="CUDA seg*,CUDA context*,cuda additive*,cuda simple_gla*,cuda gla*"
NEW="CUDA segmented chunkwise: pass A of the rules that only add*"
( timeout 75 $B/t "-tc=$TC" > "$OUT/tests.log" 2>&1; echo "tests rc $?" >> "$OUT/tests.log" ) &
( timeout 75 compute-sanitizer --tool memcheck --error-exitcode 9 $B/t "-tc=$NEW" > /tmp/segA15/mc.log 2>&1; echo "memcheck rc $?" >> /tmp/segA15/mc.log ) &
( timeout 75 compute-sanitizer --tool racecheck --kernel-regex kns=piece_state_kernel --error-exitcode 9 $B/t "-tc=$NEW" > /tmp/segA15/rc.log 2>&1; echo "racecheck rc $?" >> /tmp/segA15/rc.log ) &
wait
{ grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:|assertions:|rc " /tmp/segA15/mc.log /tmp/segA15/rc.log; } > "$OUT/checks.txt" 2>&1
grep -E "ERROR|test cases|assertions|rc " "$OUT/tests.log" | head -30
cat "$OUT/checks.txt"
el timing
timeout 70 $B/sb --passa > "$OUT/passa.jsonl" 2>&1; echo "passa rc $?" >> "$OUT/passa.jsonl"
cut -c1-300 "$OUT/passa.jsonl"
el done
