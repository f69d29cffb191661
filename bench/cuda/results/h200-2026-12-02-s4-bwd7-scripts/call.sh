#!/usr/bin/env bash
# bwd7's device call (#14, one call): the bwd5 phase-4 kernels merged onto main, block_gemm_direct's k loop
# unrolled by two, the backward's 16-byte cp.async shared with the forward's.
#  - build on the device (16 cores): the 7 instance units, main.cu + backward_test.cu, bench_cuda.cu, the
#    conformance runner (sm_90a only), in the background;
#  - meanwhile grad_ab (built on the CPU machine, carried as grad_ab_u{2,1}.xz; u2 = the library's choice, u1 =
#    -DLINEA_BWD_DIRECT_UNROLL=1): --check (new vs main's phase-4 kernels at odd shapes), then the A/B at 8x4096 and
#    1x32768, then u1's whole backward;
#  - the backward test cases, conformance, memcheck + racecheck on "bf16 over 32 chunks" side by side;
#  - linea_cuda_bench --backward alone.
# Run from the repository root: bash .gpu/bwd7/bench/cuda/results/h200-2026-12-02-s4-bwd7-scripts/call.sh
set -u
R=$(cd "$(dirname "$0")/../../../.." && pwd)   # .gpu/bwd7
cd $R
export PATH=/usr/local/cuda/bin:$PATH
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s"; }
left() { echo $(( ${LIMIT:-250} - ($(date +%s) - S) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
D=$(cd ../deps && pwd); C=$(cd ../conformance && pwd); B=/tmp/b; mkdir -p $B
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
el build-bg
( { for s in $R/tests/backend/cuda/instances/*.cu; do echo "I $s"; done
    for s in $R/tests/backend/cuda/backward_test.cu $R/tests/backend/cuda/main.cu $R/bench/cuda/bench_cuda.cu $R/tools/linea_cuda_conformance.cu; do echo "E $s"; done; } |
  xargs -P 12 -L 1 sh -c 'o='$B'/$(basename "$2" .cu)$([ "$1" = I ] && echo .inst).o; d=$([ "$1" = E ] && echo -DLINEA_CUDA_EXTERN_INSTANCES); t=$(date +%s); nice nvcc '"$FL"' $d -c "$2" -o "$o" || echo "FAILED: $2"; echo "$(( $(date +%s) - t )) s $2"' _
  L="nvcc -gencode=arch=compute_90a,code=sm_90a"
  $L $B/main.o $B/backward_test.o $B/*.inst.o -o $B/tests && $L $B/bench_cuda.o $B/*.inst.o -o $B/bench &&
    $L $B/linea_cuda_conformance.o $B/*.inst.o -o $B/conf && touch $B/built
  echo "build done at $(( $(date +%s) - S )) s" ) > $OUT/build.log 2>&1 &
BUILD=$!
for u in 2 1; do xz -dc grad_ab_u$u.xz > /tmp/grad_ab_u$u && chmod +x /tmp/grad_ab_u$u; done
el ab-check
timeout 40 /tmp/grad_ab_u2 --check > $OUT/ab.jsonl 2>&1; echo "check rc $?"
el ab-time
timeout 70 /tmp/grad_ab_u2 >> $OUT/ab.jsonl 2>&1; echo "ab u2 rc $?"
el ab-u1
GRAD_AB_WHOLE_ONLY=1 timeout 40 /tmp/grad_ab_u1 > $OUT/ab_u1.jsonl 2>&1; echo "ab u1 rc $?"
cat $OUT/ab.jsonl; echo "-- u1 (rolled k loop):"; cat $OUT/ab_u1.jsonl
el memcheck-ab
if [ ! -e $B/built ] && [ $(left) -gt 150 ]; then
  timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/grad_ab_u2 --check > /tmp/mc_ab.log 2>&1; echo "memcheck grad_ab --check rc $?"; tail -n 2 /tmp/mc_ab.log
fi
el wait-build
wait $BUILD
grep -E "FAILED|error|spill|[0-9] s |build done" $OUT/build.log | head -40
if [ -e $B/built ]; then
  el checks
  T=$B/tests
  (LINEA_BACKWARD_ERRORS=1 timeout 100 $T > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log) &
  (timeout 60 $B/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log) &
  (timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=CUDA backward: bf16 over 32*" > $OUT/san.log 2>&1; echo "memcheck rc $?" >> $OUT/san.log
   timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=CUDA backward: one CTA*" > /tmp/san2.log 2>&1; echo "memcheck one-CTA rc $?" >> $OUT/san.log; grep -E "ERROR SUMMARY|test cases" /tmp/san2.log >> $OUT/san.log) &
  (timeout 100 compute-sanitizer --tool racecheck --error-exitcode 9 $T "-tc=CUDA backward: bf16 over 32*" > /tmp/race.log 2>&1; echo "racecheck rc $?" >> /tmp/race.log) &
  wait
  cat /tmp/race.log >> $OUT/san.log
  grep -E "ERROR|FAILED|test cases|assertions|rc " $OUT/tests.log | head -30
  grep -E '^FAIL' $OUT/conformance.log | head; echo "backward lines: $(grep -c backward $OUT/conformance.log)"; tail -n 3 $OUT/conformance.log
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases|rc " $OUT/san.log
  el bench
  timeout 60 $B/bench --backward > $OUT/bench.jsonl 2>&1; echo "bench rc $?"; cat $OUT/bench.jsonl
  el ncu
  for rb in gated_delta_rule:8 kda:8; do
    [ $(left) -gt 25 ] || break
    LINEA_BENCH_BACKWARD=$rb timeout 25 ncu -k regex:"prep|states|grad" -c 4 --metrics gpu__time_duration.sum $B/bench --backward > /tmp/ncu.log 2>&1
    echo "ncu $rb:"; grep -hE "^  [a-z_]+.*\\(|gpu__time" /tmp/ncu.log | sed -E "s/\\(linea::cuda_detail::bwd::work.*//" | cut -c1-110
  done
fi
el done
