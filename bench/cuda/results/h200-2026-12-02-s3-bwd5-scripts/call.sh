#!/usr/bin/env bash
# bwd5 device call (one call, trimmed to the team's budget): phase-4 A/B (grad_ab: main's kernels, the branch's, the
# other `Wide` choice) and correctness against main's kernels, then as time allows (LIMIT s): ncu of the three
# gated_delta kernels, memcheck, main's CI-built bench (--backward: forward times), and the branch's backward_test
# built here in the background from src/ (the branch's include/, tests/, tools/) with the instance units.
set -x
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s"; }
left() { echo $(( ${LIMIT:-170} - ($(date +%s) - S) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
xz -dc grad_ab.xz > /tmp/grad_ab && chmod +x /tmp/grad_ab
xz -dc bench.xz > /tmp/bench && chmod +x /tmp/bench
(
  cd src; D=$(cd ../../deps && pwd); O=/tmp/bo; mkdir -p $O
  FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Iinclude -Itests -Itools -I$D -I$D/eigen3"
  { for s in tests/backend/cuda/instances/*.cu; do echo "I $s"; done
    for s in tests/backend/cuda/backward_test.cu tests/backend/cuda/main.cu; do echo "E $s"; done; } |
    xargs -P 16 -L 1 sh -c 'o=/tmp/bo/$(basename "$2" .cu)$([ "$1" = I ] && echo .inst).o; d=$([ "$1" = E ] && echo -DLINEA_CUDA_EXTERN_INSTANCES); nvcc '"$FL"' $d -c "$2" -o "$o" || echo "FAILED $2"'
  nvcc -gencode=arch=compute_90a,code=sm_90a $O/backward_test.o $O/main.o $O/*.inst.o -o /tmp/bwd_tests && touch /tmp/built
  echo "build done at $(( $(date +%s) - S )) s"
) > /tmp/build.log 2>&1 &
el check
timeout 40 /tmp/grad_ab --check > $OUT/check.jsonl 2>&1; echo "check rc $?"; cat $OUT/check.jsonl
el ab
timeout 90 /tmp/grad_ab > $OUT/ab.jsonl 2>&1; echo "ab rc $?"; cat $OUT/ab.jsonl
el ncu
if [ $(left) -gt 50 ]; then
  GRAD_AB_ONLY=gated_delta_rule timeout 45 ncu --clock-control none --set full --import-source yes -k regex:grad_kernel \
    --launch-skip 1 -c 3 -o /tmp/cg /tmp/grad_ab --once > $OUT/ncu.log 2>&1; echo "ncu cg rc $?"
  ncu -i /tmp/cg.ncu-rep --page details > $OUT/details.txt 2>&1
  ncu -i /tmp/cg.ncu-rep --page source --csv --print-source cuda > $OUT/cg.src.csv 2>>$OUT/ncu.log ||
    ncu -i /tmp/cg.ncu-rep --page source --csv > $OUT/cg.src.csv 2>>$OUT/ncu.log || true
  grep -E "grad_kernel|Duration|Registers Per|Warp Cycles Per Issued|Issue Slots Busy" $OUT/details.txt | head -20
fi
{ el memcheck
  [ $(left) -gt 35 ] && { timeout 35 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/grad_ab --check 2>&1 | tail -3; echo "memcheck grad_ab rc ${PIPESTATUS[0]}"; }
  el bench
  [ $(left) -gt 25 ] && { timeout 25 /tmp/bench --backward > /tmp/bench.jsonl 2>&1; echo "bench rc $?"; cat /tmp/bench.jsonl; }
  el tests
  [ -e /tmp/built ] && [ $(left) -gt 15 ] && { timeout $(left) /tmp/bwd_tests 2>&1 | tail -12; echo "tests rc ${PIPESTATUS[0]}"; }
  cat /tmp/build.log | grep -E "FAILED|error|build done" | head
  el done; } > $OUT/verify.log 2>&1
cat $OUT/verify.log
