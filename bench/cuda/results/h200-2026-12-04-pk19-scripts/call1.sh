#!/usr/bin/env bash
# pk19 call 1 (prepared 2026-12-04 without device time; NOT YET RUN): this branch's perkey_delta_kernel against main
# 6dca2f0's (bench/cuda/perkey_delta_ab_v0.hpp) in one process, and the suite's per-key cases on the library's path.
#   1. build (16 cores, ~3 min): every instance unit, the suite's units, perkey_delta_ab.cu (extern instances)
#   2. alone: `perkey_ab --check` (new bit-identical to old, new and derived within SPEC §5 of float64, finite;
#      K = 128 and 72; ordinary, extreme, mixed gates; in-kernel and misaligned gates: a verdict a case, rc 2 on any
#      failure)
#   3. timing, alone: `perkey_ab --short` (8×4096 new / derived / old / other kernel, ordinary and extreme gates;
#      the library's path; 2×333); summary.txt (summary.py, next to this script)
#   4. side by side, within what is left of LIMIT: the suite (SUITE_TC, default its per-key cases); compute-sanitizer
#      memcheck and racecheck (perkey_delta_kernel) of `perkey_ab --check` (PERKEY_CHECK=sanitize: a quarter of the
#      cases, every path) and of the suite's per-key poison case
# Run in the repository root with .gpu/deps there (the header deps), e.g. from a helper's copy under .gpu/<name>:
#   cd .gpu/<name> && mkdir -p .gpu && ln -sfn ../../deps .gpu/deps && bash bench/cuda/results/h200-2026-12-04-pk19-scripts/call1.sh
# (carry .gpu/<name> .gpu/deps; timeout_s 580, LIMIT 540 by default). Writes under $OUT: build.txt, checks.txt, tests.log,
# perkey_check.jsonl, perkey_ab.jsonl, summary.txt.
set -u
R=$(pwd); G=$R/.gpu; W=/tmp/pk19; rm -rf $W; mkdir -p $W/obj
export PATH=${CUDA_BIN:-/usr/local/cuda/bin}:$PATH
LIMIT=${LIMIT:-540}  # seconds the whole call may take (give the run tool's timeout_s ≥ LIMIT + 20)
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s" | tee -a "$OUT/checks.txt"; }
export FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$G/deps -I$G/deps/eigen3"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$OUT/checks.txt" 2>&1

el build  # I: instance units; E: units that link them (the suite's, perkey_delta_ab.cu)
{ for s in tests/backend/cuda/instances/*.cu; do echo "I $R/$s"; done
  for s in bench/cuda/perkey_delta_ab.cu tests/backend/cuda/*.cu; do echo "E $R/$s"; done; } |
  timeout 360 xargs -P 24 -L 1 sh -c '
    n=$(basename "$1" .cu); [ "$0" = I ] && n="$n.inst"; o="'$W'/obj/$n.o"
    d=-DLINEA_CUDA_EXTERN_BACKWARD_PHASES; [ "$0" = E ] && d="$d -DLINEA_CUDA_EXTERN_INSTANCES"
    nvcc $FLAGS $d -c "$1" -o "$o" > "$o.log" 2>&1 || echo "FAILED: $1"' >> "$OUT/build.txt" 2>&1
grep -h -B1 "spill" $W/obj/*.log | grep -E "perkey_delta|spill" | sort | uniq -c | sort -rn | head -12 >> "$OUT/build.txt"
el link
I=$(ls $W/obj/*.inst.o); O=$(ls $W/obj/*.o | grep -v -E 'inst.o|perkey_delta_ab')
nvcc -gencode=arch=compute_90a,code=sm_90a $O $I -o $W/tests >> "$OUT/build.txt" 2>&1 &
nvcc -gencode=arch=compute_90a,code=sm_90a $W/obj/perkey_delta_ab.o $I -o $W/perkey_ab >> "$OUT/build.txt" 2>&1 &
wait
ls -la $W >> "$OUT/build.txt"; grep -h -E "error|FAILED" "$OUT/build.txt" $W/obj/*.log | head -12 | tee -a "$OUT/checks.txt"

el check  # alone: the verdicts (~10 s)
( timeout 120 $W/perkey_ab --check > "$OUT/perkey_check.jsonl" 2>&1; echo "perkey_ab --check rc $?" >> "$OUT/perkey_check.jsonl" )
grep -E "check_summary|rc " "$OUT/perkey_check.jsonl" | tee -a "$OUT/checks.txt"

el timing  # alone on the GPU (~30 s)
( timeout 120 $W/perkey_ab ${PERKEY_ARGS:---short} > "$OUT/perkey_ab.jsonl" 2>&1; echo "perkey_ab rc $?" >> "$OUT/perkey_ab.jsonl" )
python3 "$R/bench/cuda/results/h200-2026-12-04-pk19-scripts/summary.py" "$OUT" > "$OUT/summary.txt" 2>&1

el sanitizers+suite  # side by side, bounded by what is left of LIMIT (a killed call still returns what is under $OUT)
T=$(( LIMIT - ($(date +%s) - S) - 15 )); [ $T -gt 240 ] && T=240; echo "(each step ≤ $T s)" >> "$OUT/checks.txt"
if [ $T -gt 30 ]; then
TC=${SUITE_TC:-*kda*,*gdn2*,*gla*,*per-key*,*partial tiles*,*qk_l2norm*,*-inf*,*poisons*,*states only*,*sanitize*}
POISON="cuda: a NaN or inf input poisons only what the recurrence poisons (delta and per-key pipelines)"
( timeout $T $W/tests "-tc=$TC" > "$OUT/tests.log" 2>&1; echo "tests rc $?" >> "$OUT/tests.log" ) &
( PERKEY_CHECK=sanitize timeout $T compute-sanitizer --tool memcheck --error-exitcode 9 $W/perkey_ab --check > $W/mc1.log 2>&1; echo "memcheck perkey_ab --check (sanitize subset) rc $?" >> $W/mc1.log ) &
( PERKEY_CHECK=sanitize timeout $T compute-sanitizer --tool racecheck --kernel-regex kns=perkey_delta_kernel --error-exitcode 9 $W/perkey_ab --check > $W/mc2.log 2>&1; echo "racecheck perkey_ab --check (sanitize subset) rc $?" >> $W/mc2.log ) &
( timeout $T compute-sanitizer --tool racecheck --kernel-regex kns=perkey_delta --error-exitcode 9 $W/tests "-tc=$POISON" > $W/mc3.log 2>&1; echo "racecheck [perkey_delta | poison case] rc $?" >> $W/mc3.log ) &
( timeout $T compute-sanitizer --tool memcheck --error-exitcode 9 $W/tests "-tc=$POISON,cuda: per-key rules' chunk kernels with in-kernel gates*" > $W/mc4.log 2>&1; echo "memcheck [poison, in-kernel gates] rc $?" >> $W/mc4.log ) &
wait
for f in $W/mc*.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:|rc |check_summary" $f | cut -c1-300; grep -h -E "Hazard|Invalid|\"pass\":false" $f | head -5 | cut -c1-300; done >> "$OUT/checks.txt"
grep -E "test cases|assertions|rc " "$OUT/tests.log" >> "$OUT/checks.txt"
fi
el done
cat "$OUT/checks.txt" "$OUT/summary.txt"
