#!/usr/bin/env bash
# seg12's device call (issue #15, 2026-12-03): pass M of the decay-only rules from the summed log decays.
# Run from the repository root of the device's copy, with the branch's tree in .gpu/seg12 (git archive of the
# branch), .gpu/deps and .gpu/conformance carried:
#   bash .gpu/seg12/bench/cuda/results/h200-2026-12-03-seg12-scripts/call.sh
# Builds the 7 instance units (or takes them from INST, a folder of *.inst.o of main 861c7ef or later with the same
# kernel headers: the instances compile cuda_detail::run<> and the backward only, which reach nothing this branch
# changed), the test binary (segments_test + rules_test), segments_bench and the conformance runner (sm_90a, 16
# jobs); then segments_test (all cases), the --ab timing alone on the GPU (the decay sums against main 861c7ef's
# general pass M, interleaved in one process), conformance, rules_test's simple_gla and gla cases, memcheck and
# racecheck (the decay kernel) on the new segmented case.
# Device time: the instance units took 119–150+ s each on the device with 12 units in parallel (call 1, which
# stopped them at 150 s: gated_delta.cu unfinished); allow ~330 s with the build, ~120 s with INST.
set -u
TOP=$PWD; R=$TOP/.gpu/seg12; C=$TOP/.gpu/conformance; DEPS=$TOP/.gpu/deps
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a $OUT/summary.txt; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee $OUT/summary.txt
B=/tmp/b; mkdir -p $B/obj
export FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$DEPS -I$DEPS/eigen3"
el build
{ [ -n "${INST:-}" ] || for s in $R/tests/backend/cuda/instances/*.cu; do echo "I $s"; done
  for s in $R/tests/backend/cuda/main.cu $R/tests/backend/cuda/rules_test.cu $R/tests/backend/cuda/segments_test.cu \
           $R/tools/linea_cuda_conformance.cu $R/bench/cuda/segments_bench.cu; do echo "E $s"; done; } |
  timeout 240 xargs -P 16 -L 1 sh -c 'o=/tmp/b/obj/$(basename "$2" .cu)$([ "$1" = I ] && echo .inst).o; d=$([ "$1" = E ] && echo -DLINEA_CUDA_EXTERN_INSTANCES); /usr/bin/time -f "%e s wall %U s user: $2" nvcc $FLAGS $d -c "$2" -o "$o" || echo "FAILED: $2"' _ > $OUT/build.log 2>&1
el link
grep -E "FAILED|error|spill" $OUT/build.log | head -20
[ -n "${INST:-}" ] && cp $INST/*.inst.o $B/obj/
cd $B; I=$(ls obj/*.inst.o); L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L obj/segments_bench.o $I -o sb & $L obj/main.o obj/rules_test.o obj/segments_test.o $I -o tests & $L obj/linea_cuda_conformance.o $I -o conf & wait
ls
el segments_test
timeout 40 ./tests "-tc=CUDA segmented*,CUDA context parallel*" > $OUT/tests.log 2>&1; echo "segments_test rc $?" >> $OUT/tests.log
grep -E "ERROR|FAILED|test cases|assertions|rc " $OUT/tests.log | head -20 | tee -a $OUT/summary.txt
el ab-timing
timeout 40 ./sb --ab > $OUT/ab.jsonl 2>&1; echo "ab rc $?" | tee -a $OUT/summary.txt
el checks
( timeout 45 ./conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
( timeout 45 ./tests "-tc=cuda simple_gla*,cuda gla*" > $OUT/rules.log 2>&1; echo "rules_test rc $?" >> $OUT/rules.log ) &
( timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 ./tests "-tc=CUDA segmented chunkwise: decay-only*" > $OUT/memcheck.log 2>&1; echo "memcheck rc $?" >> $OUT/memcheck.log ) &
( timeout 60 compute-sanitizer --tool racecheck --kernel-name kns=decay_product_kernel --error-exitcode 9 ./tests "-tc=CUDA segmented chunkwise: decay-only*" > $OUT/racecheck.log 2>&1; echo "racecheck rc $?" >> $OUT/racecheck.log ) &
wait
el collect
grep -E "test cases|assertions|rc " $OUT/rules.log | tee -a $OUT/summary.txt
grep -E '^FAIL' $OUT/conformance.log | head; tail -n 3 $OUT/conformance.log | tee -a $OUT/summary.txt
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|test cases|rc " $OUT/memcheck.log $OUT/racecheck.log | tee -a $OUT/summary.txt
grep -m5 -hE 'Invalid|Error|hazard' $OUT/memcheck.log $OUT/racecheck.log
grep -E '"kind":"(ab|pass_m)"' $OUT/ab.jsonl | sed -E 's/"kind"://; s/"rule"://; s/"shape"://' | cut -c1-230
el done
