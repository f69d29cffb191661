#!/usr/bin/env bash
# seg16 call 1 (objects built on the workstation by build_local.sh, carried as objs.tar.xz): link segments_test and
# segments_bench; the suite's segmented / context cases; memcheck and racecheck on the cases that run the new pass A
# (piece_state_kernel, piece_state_reduce_kernel); then, alone on the GPU, segments_bench --seg16 (A/B against main
# 430ab74's pass A, slab counts, fused pass M; the passes alone), --gdn2, and ncu on pass A's kernels if time is left.
# Run in the copy's root (.gpu/seg16, with .gpu/deps linked). Budget: ~120 s of command.
set -u
R=$(pwd); G=$R/.gpu
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a "$OUT/build.txt"; }
B=/tmp/seg16; mkdir -p $B/obj
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$OUT/build.txt" 2>&1
tar -C $B/obj -xJf $R/objs.tar.xz
el link
L="nvcc -gencode=arch=compute_90a,code=sm_90a"; I=$(ls $B/obj/*.inst.o)
$L $B/obj/segments_test.o $B/obj/main.o $I -o $B/t >> "$OUT/build.txt" 2>&1 &
$L $B/obj/segments_bench.o $I -o $B/sb >> "$OUT/build.txt" 2>&1 &
wait
ls -la $B/t $B/sb >> "$OUT/build.txt" 2>&1
el checks
NEW="CUDA segmented chunkwise: pass A of the rules that only add*"
GATES="CUDA segmented chunkwise: decay-only rules*"
( timeout 80 $B/t "-tc=CUDA seg*,CUDA context*,CUDA chunk kernels*" > "$OUT/tests.log" 2>&1; echo "tests rc $?" >> "$OUT/tests.log" ) &
( timeout 80 compute-sanitizer --tool memcheck --error-exitcode 9 $B/t "-tc=$NEW,$GATES" > $B/mc.log 2>&1; echo "memcheck rc $?" >> $B/mc.log ) &
( timeout 80 compute-sanitizer --tool racecheck --kernel-regex kns=piece_state_kernel --error-exitcode 9 $B/t "-tc=$NEW" > $B/rc.log 2>&1; echo "racecheck rc $?" >> $B/rc.log ) &
wait
{ echo "-- memcheck"; grep -h -E "ERROR SUMMARY|test cases:|assertions:|rc " $B/mc.log; grep -m5 -h "Invalid\|error" $B/mc.log;
  echo "-- racecheck"; grep -h -E "RACECHECK SUMMARY|test cases:|assertions:|rc " $B/rc.log; grep -m5 -h "hazard" $B/rc.log; } > "$OUT/checks.txt" 2>&1
grep -E "ERROR|test cases|assertions|rc " "$OUT/tests.log" | head -30
cat "$OUT/checks.txt"
el seg16
timeout 75 $B/sb --seg16 > "$OUT/seg16.jsonl" 2>&1; echo "seg16 rc $?" >> "$OUT/seg16.jsonl"
el gdn2
timeout 30 $B/sb --gdn2 > "$OUT/gdn2.jsonl" 2>&1; echo "gdn2 rc $?" >> "$OUT/gdn2.jsonl"
el ncu
if [ $(( $(date +%s) - START )) -lt 120 ] && command -v ncu > /dev/null; then
  timeout 30 ncu -k regex:piece_state --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis $B/sb --once16 > "$OUT/ncu.txt" 2>&1; echo "ncu rc $?" >> "$OUT/ncu.txt"
fi
el done
