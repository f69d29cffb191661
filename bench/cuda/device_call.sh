#!/usr/bin/env bash
# bench/cuda/device_call.sh — one device call on a merged tree: build on the GPU machine, check, then time.
# Replaces the per-session copies of the same script (results/*-scripts/call.sh). Run in the repository root:
#
#   LIMIT=400 FULL=1 AB_RULES="gated_delta kda" bash bench/cuda/device_call.sh      (carry .gpu/deps .gpu/conformance)
#
#   LIMIT       seconds the whole call may take (steps are skipped when too little is left)
#   FULL=1      also build and run linea_cuda_bench (--backward) and the fuzz driver
#   AB_RULES    rules (linea:: names) for bench/cuda/grad_ab.cu: a memcheck of --check, then the timings
#   IO_AB=1     bench/cuda/io_ab.cu (phases 0 and 5 against io_ab_v0.hpp)
#   SEG_AB=1    linea_segments_bench --ab
#   SEG_ARGS    linea_segments_bench modes to run, each into seg_<mode>.jsonl (e.g. "--passa --states"; SEG_TIMEOUT s each)
#   PERKEY_AB=1 bench/cuda/perkey_delta_ab.cu: memcheck and racecheck of --check, then the timings (PERKEY_ARGS, e.g.
#               --short)
#   MEMCHECK    extra suite test-case patterns for memcheck, ';'-separated (the backward bf16 case always runs)
#   RACECHECK   "kernel-regex|test-case pattern" pairs, ';'-separated
#   SUITE_TC    a -tc pattern for the suite (default: all of it)
#   FUZZ_CASES  known-hard fuzz cases of seed 20261207 to rerun (default 2431 212 2518); FUZZ_SEED a fresh seed's 400
# Writes under $OUT: build.txt, tests.log, conformance.log, checks.txt, grad_ab_<rule>.jsonl, io_ab.jsonl,
# seg_ab.jsonl, bench_backward.jsonl, perkey_ab.jsonl (at most 8 files come back: keep it so).
set -u
R=$(pwd); G=$R/.gpu
export PATH=${CUDA_BIN:-/usr/local/cuda/bin}:$PATH
START=$(date +%s); LIMIT=${LIMIT:-400}
el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a "$OUT/build.txt"; }
left() { echo $(( LIMIT - ($(date +%s) - START) )); }
B=/tmp/b; mkdir -p $B/obj
export FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$G/deps -I$G/deps/eigen3"
NCCL=""; for d in /usr/local/cuda/lib /usr/local/cuda/lib64; do [ -e $d/libnccl.so ] && { NCCL="-L$d -Xlinker -rpath=$d -lnccl"; break; }; done
[ -n "$NCCL" ] && export FLAGS="$FLAGS -DLINEA_TEST_NCCL"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$OUT/build.txt" 2>&1

el build  # every translation unit in parallel: instances (I), units that link them (E), standalone drivers (S);
# the backward's phase launchers extern as CMake builds them (backward_phase_instances.hpp)
{ for s in tests/backend/cuda/instances/*.cu; do echo "I $R/$s x"; done
  for s in tests/backend/cuda/*.cu bench/cuda/segments_bench.cu tools/linea_cuda_conformance.cu; do echo "E $R/$s x"; done
  [ -n "${FULL:-}" ] && for s in bench/cuda/bench_cuda.cu tests/backend/cuda/fuzz/cuda_fuzz.cu; do echo "E $R/$s x"; done
  for r in ${AB_RULES:-}; do echo "E $R/bench/cuda/grad_ab.cu $r"; done
  [ -n "${PERKEY_AB:-}" ] && echo "E $R/bench/cuda/perkey_delta_ab.cu x"
  [ -n "${IO_AB:-}" ] && echo "S $R/bench/cuda/io_ab.cu x"; } |
  timeout 330 xargs -P 24 -L 1 sh -c '
    n=$(basename "$2" .cu); [ "$3" != x ] && n="${n}_$3"; [ "$1" = I ] && n="$n.inst"; o="$0/obj/$n.o"
    d=-DLINEA_CUDA_EXTERN_BACKWARD_PHASES; [ "$1" = E ] && d="$d -DLINEA_CUDA_EXTERN_INSTANCES"; [ "$3" != x ] && d="$d -DGRAD_AB_RULE=linea::$3"
    if [ "$1" = S ]; then nvcc $FLAGS "$2" -o "$0/$n" > "$o.log" 2>&1 || echo "FAILED: $2"
    else nvcc $FLAGS $d -c "$2" -o "$o" > "$o.log" 2>&1 || echo "FAILED: $2 $3"; fi' $B >> "$OUT/build.txt" 2>&1
grep -h "spill" $B/obj/*.log | sort | uniq -c | sort -rn | head -12 >> "$OUT/build.txt"

el link
L="nvcc -gencode=arch=compute_90a,code=sm_90a"; I=$(ls $B/obj/*.inst.o)
T=$B/linea_cuda_tests
O=$(ls $B/obj/*.o | grep -v -E 'inst.o|bench_cuda.o|segments_bench.o|linea_cuda_conformance.o|cuda_fuzz.o|grad_ab|perkey_delta_ab')
$L $O $I $NCCL -o $T >> "$OUT/build.txt" 2>&1 &
$L $B/obj/linea_cuda_conformance.o $I -o $B/conf >> "$OUT/build.txt" 2>&1 &
$L $B/obj/segments_bench.o $I -o $B/sb >> "$OUT/build.txt" 2>&1 &
[ -e $B/obj/bench_cuda.o ] && { $L $B/obj/bench_cuda.o $I -o $B/bench >> "$OUT/build.txt" 2>&1 & }
[ -e $B/obj/cuda_fuzz.o ] && { $L $B/obj/cuda_fuzz.o $I -o $B/cuda_fuzz >> "$OUT/build.txt" 2>&1 & }
[ -e $B/obj/perkey_delta_ab.o ] && { $L $B/obj/perkey_delta_ab.o $I -o $B/perkey_ab >> "$OUT/build.txt" 2>&1 & }
for r in ${AB_RULES:-}; do [ -e $B/obj/grad_ab_$r.o ] && { $L $B/obj/grad_ab_$r.o $I -o $B/ab_$r >> "$OUT/build.txt" 2>&1 & }; done
wait
ls -la $B | grep -v obj >> "$OUT/build.txt" 2>&1
grep -h -E "error|FAILED" "$OUT/build.txt" $B/obj/*.log | head -12

el checks  # side by side: the suite, conformance, sanitizers, fuzz
C=$G/conformance
( timeout 200 $T ${SUITE_TC:+"-tc=$SUITE_TC"} > "$OUT/tests.log" 2>&1; echo "tests rc $?" >> "$OUT/tests.log" ) &
( timeout 120 $B/conf $C/fla $C/linea > "$OUT/conformance.log" 2>&1; echo "conf rc $?" >> "$OUT/conformance.log" ) &
i=0
IFS=';' read -r -a mc <<< "CUDA backward: bf16 over 32 chunks*;${MEMCHECK:-}"
for tc in "${mc[@]}"; do [ -z "$tc" ] && continue; i=$((i + 1))
  ( timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=$tc" > /tmp/mc$i.log 2>&1; echo "memcheck [$tc] rc $?" >> /tmp/mc$i.log ) & done
IFS=';' read -r -a rc <<< "${RACECHECK:-}"
for pair in "${rc[@]}"; do [ -z "$pair" ] && continue; i=$((i + 1)); k=${pair%%|*}; tc=${pair#*|}
  ( timeout 150 compute-sanitizer --tool racecheck --kernel-regex kns=$k --error-exitcode 9 $T "-tc=$tc" > /tmp/mc$i.log 2>&1; echo "racecheck [$k | $tc] rc $?" >> /tmp/mc$i.log ) & done
for r in ${AB_RULES:-}; do [ -x $B/ab_$r ] && { i=$((i + 1)); ( timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_$r --check > /tmp/mc$i.log 2>&1; echo "memcheck grad_ab --check $r rc $?" >> /tmp/mc$i.log; grep -h '"kind"' /tmp/mc$i.log | cut -c1-400 | head -12 >> /tmp/mc$i.log ) & }; done
[ -x $B/perkey_ab ] && { i=$((i + 1)); ( timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $B/perkey_ab --check > /tmp/mc$i.log 2>&1; echo "memcheck perkey_ab --check rc $?" >> /tmp/mc$i.log ) &
  i=$((i + 1)); ( timeout 150 compute-sanitizer --tool racecheck --kernel-regex kns=perkey_delta_kernel --error-exitcode 9 $B/perkey_ab --check > /tmp/mc$i.log 2>&1; echo "racecheck perkey_ab --check rc $?" >> /tmp/mc$i.log ) & }
[ -x $B/io_ab ] && { i=$((i + 1)); ( timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $B/io_ab --check > /tmp/mc$i.log 2>&1; echo "memcheck io_ab --check rc $?" >> /tmp/mc$i.log ) & }
[ -x $B/cuda_fuzz ] && ( for c in ${FUZZ_CASES:-2431 212 2518}; do timeout 25 $B/cuda_fuzz --seed 20261207 --from $c --to $((c + 1)) 2>&1 | grep '^RESULT' | cut -c1-300; done
  timeout 80 $B/cuda_fuzz --seed ${FUZZ_SEED:-20261213} --from 0 --to 400 --budget 70 > /tmp/fzr.log 2>&1; echo "fuzz seed ${FUZZ_SEED:-20261213} rc $?"
  grep '^RESULT' /tmp/fzr.log | awk '{print $3}' | sort | uniq -c; grep -E '^RESULT [0-9]+ FAIL|^BUDGET' /tmp/fzr.log | cut -c1-300 | head -20 ) > /tmp/fz.log 2>&1 &
wait
{ for f in /tmp/mc*.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:|rc |\"kind\"" $f | cut -c1-400; done
  echo "-- fuzz"; cat /tmp/fz.log 2>/dev/null; } > "$OUT/checks.txt" 2>&1
grep -E "ERROR|FAILED|test cases|assertions|skipped|rc " "$OUT/tests.log" | head -20
grep -E '^FAIL' "$OUT/conformance.log" | head; tail -n 3 "$OUT/conformance.log"
cat "$OUT/checks.txt"

el timing  # alone on the GPU
for r in ${AB_RULES:-}; do [ -x $B/ab_$r ] && [ $(left) -gt 60 ] && {
  timeout 60 $B/ab_$r ${AB_ARGS:-} > "$OUT/grad_ab_$r.jsonl" 2>&1; echo "grad_ab $r rc $?" >> "$OUT/grad_ab_$r.jsonl"; cut -c1-1500 "$OUT/grad_ab_$r.jsonl"; }; done
[ -x $B/io_ab ] && [ $(left) -gt 40 ] && { timeout 40 $B/io_ab > "$OUT/io_ab.jsonl" 2>&1; echo "io_ab rc $?" >> "$OUT/io_ab.jsonl"; grep -o '"phase[05]_[a-z]*_ms":[0-9.]*' "$OUT/io_ab.jsonl" | head -20 | tr '\n' ' '; echo; }
[ -x $B/perkey_ab ] && [ $(left) -gt 60 ] && { timeout 60 $B/perkey_ab ${PERKEY_ARGS:-} > "$OUT/perkey_ab.jsonl" 2>&1; echo "perkey_ab rc $?" >> "$OUT/perkey_ab.jsonl"; cut -c1-400 "$OUT/perkey_ab.jsonl" | head -40; }
for sa in ${SEG_ARGS:-}; do [ $(left) -gt 50 ] && { timeout ${SEG_TIMEOUT:-60} $B/sb $sa > "$OUT/seg_${sa#--}.jsonl" 2>&1; echo "seg $sa rc $?" >> "$OUT/seg_${sa#--}.jsonl"; }; done
[ -n "${SEG_AB:-}" ] && [ $(left) -gt 50 ] && { timeout 45 $B/sb --ab > "$OUT/seg_ab.jsonl" 2>&1; echo "seg ab rc $?" >> "$OUT/seg_ab.jsonl"; grep -E '"kind":"(ab|pass_m)"' "$OUT/seg_ab.jsonl" | cut -c1-260; }
[ -z "${NO_BENCH:-}" ] && [ -x $B/bench ] && [ $(left) -gt 25 ] && { timeout $(( $(left) - 8 > 90 ? 90 : $(left) - 8 )) $B/bench --backward > "$OUT/bench_backward.jsonl" 2>&1; echo "bench backward rc $?"; }
el done
