#!/usr/bin/env bash
# pko2 call 1 (issue #15): build on the H200 (16 cores) the five sectors_ab binaries (standalone, LINEA_STRIP_STORE_AB),
# the CUDA instances and the suite's units; then the A/B's checks, the timings alone on the GPU, then the suite,
# memcheck and racecheck side by side. Run in the root of this branch's tree (on the device: a copy of it in the lead's
# checkout's ignored .gpu/pko2, carried with .gpu/deps: `cd .gpu/pko2 && DEPS=$PWD/../deps bash <this>`). Writes under $OUT:
# build.txt, check.jsonl, time.jsonl, tests.log, checks.txt, sanitizers.tar.xz.
set -u
R=$(pwd); D=${DEPS:-$R/.gpu/deps}
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s); LIMIT=${LIMIT:-405}
el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a "$OUT/build.txt"; }
left() { echo $(( LIMIT - ($(date +%s) - START) )); }
RULES="additive simple_gla delta gated_delta gla"
B=/tmp/b; mkdir -p $B/obj
export FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
NCCL=""; for d in /usr/local/cuda/lib /usr/local/cuda/lib64; do [ -e $d/libnccl.so ] && { NCCL="-L$d -Xlinker -rpath=$d -lnccl"; break; }; done
[ -n "$NCCL" ] && export FLAGS="$FLAGS -DLINEA_TEST_NCCL"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$OUT/build.txt" 2>&1

el build  # the A/B binaries first, then the instances and the suite's units
{ for r in $RULES; do echo "S $R/bench/cuda/sectors_ab.cu $r"; done
  for s in tests/backend/cuda/instances/*.cu; do echo "I $R/$s x"; done
  for s in tests/backend/cuda/*.cu; do echo "E $R/$s x"; done; } |
  timeout 270 xargs -P 24 -L 1 sh -c '
    n=$(basename "$2" .cu); [ "$3" != x ] && n="ab_$3"; [ "$1" = I ] && n="$n.inst"; o="$0/obj/$n.o"
    d=-DLINEA_CUDA_EXTERN_BACKWARD_PHASES; [ "$1" = E ] && d="$d -DLINEA_CUDA_EXTERN_INSTANCES"
    if [ "$1" = S ]; then nvcc $FLAGS -DLINEA_STRIP_STORE_AB -DSECTORS_AB_RULE=linea::$3 "$2" -o "$0/$n" > "$o.log" 2>&1 || echo "FAILED: $2 $3"; echo "built $n at $(( $(date +%s) - '$START' )) s"
    else nvcc $FLAGS $d -c "$2" -o "$o" > "$o.log" 2>&1 || echo "FAILED: $2 $3"; fi' $B >> "$OUT/build.txt" 2>&1
grep -h "spill" $B/obj/*.log | sort | uniq -c | sort -rn | head -12 >> "$OUT/build.txt"
el link
I=$(ls $B/obj/*.inst.o); O=$(ls $B/obj/*.o | grep -v -E 'inst.o')
nvcc -gencode=arch=compute_90a,code=sm_90a $O $I $NCCL -o $B/linea_cuda_tests >> "$OUT/build.txt" 2>&1 &
wait
ls -la $B | grep -v obj >> "$OUT/build.txt" 2>&1
grep -h -E "error|FAILED" "$OUT/build.txt" $B/obj/*.log | head -12

el check  # the A/B's bit-identity cases, each binary once (unsanitized)
for r in $RULES; do [ -x $B/ab_$r ] && { timeout 60 $B/ab_$r --check >> "$OUT/check.jsonl" 2>&1; echo "{\"kind\":\"rc\",\"rule\":\"$r\",\"rc\":$?}" >> "$OUT/check.jsonl"; }; done
grep -c '"pass":true' "$OUT/check.jsonl"; grep -c '"pass":false' "$OUT/check.jsonl"; grep -E '"pass":false|check_summary|"rc"' "$OUT/check.jsonl" | cut -c1-300

el timing  # alone on the GPU: each binary twice, the rules' order reversed the second time
for pass in 1 2; do
  [ $pass = 1 ] && order="$RULES" || order="gla gated_delta delta simple_gla additive"
  for r in $order; do [ -x $B/ab_$r ] && [ $(left) -gt 70 ] && {
    timeout 40 $B/ab_$r > /tmp/t.jsonl 2>&1; echo "{\"kind\":\"rc\",\"rule\":\"$r\",\"pass\":$pass,\"rc\":$?}" >> /tmp/t.jsonl
    sed "s/^{/{\"process\":$pass,/" /tmp/t.jsonl >> "$OUT/time.jsonl"; }; done; done
grep '"kind":"time"' "$OUT/time.jsonl" | cut -c1-330

el suite_and_sanitizers
T=$B/linea_cuda_tests; tl=$(( $(left) - 10 )); [ $tl -gt 200 ] && tl=200
( [ -x $T ] && timeout $tl $T > "$OUT/tests.log" 2>&1; echo "tests rc $?" >> "$OUT/tests.log" ) &
i=0
for r in $RULES; do [ -x $B/ab_$r ] || continue
  case $r in additive|simple_gla) k=scalar_chunk_kernel;; delta|gated_delta) k=delta_pipeline_kernel;; gla) k=perkey_chunk_kernel;; esac
  i=$((i + 1)); ( timeout $tl compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_$r --check > /tmp/san_mc_$r.log 2>&1; echo "memcheck ab_$r --check rc $?" >> /tmp/san_mc_$r.log ) &
  i=$((i + 1)); ( timeout $tl compute-sanitizer --tool racecheck --kernel-regex kns=$k --error-exitcode 9 $B/ab_$r --check > /tmp/san_rc_$r.log 2>&1; echo "racecheck [$k] ab_$r --check rc $?" >> /tmp/san_rc_$r.log ) &
done
wait
for f in /tmp/san_*.log; do echo "-- $f: $(grep -c '"pass":true' $f) pass, $(grep -c '"pass":false' $f) fail"; grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|rc " $f | cut -c1-300; done > "$OUT/checks.txt" 2>&1
(cd /tmp && tar cJf "$OUT/sanitizers.tar.xz" san_*.log)
grep -E "ERROR|FAILED|test cases|assertions|skipped|rc " "$OUT/tests.log" | head -20
cat "$OUT/checks.txt"
el done
