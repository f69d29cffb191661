#!/usr/bin/env bash
# comb15 call 1: link the objects built on the workstation (build_local.sh: the instance units, the suite's
# segments_test / rules_test / main, segments_bench, the conformance runner; whole_ab.cu against main's and this
# branch's include/), then timings first (nothing else on the GPU), then the checks side by side.
# Run in .gpu/comb15 (a copy of the branch's tree) with objs.tar.xz beside it; carry .gpu/comb15 and .gpu/conformance.
set -u
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a "$OUT/build.txt"; }
B=/tmp/comb15; mkdir -p $B; C=$(pwd)/../conformance
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$OUT/build.txt" 2>&1
tar -C $B -xJf objs.tar.xz; O=$B/obj; I=$(ls $O/*.inst.o)
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $O/main.o $O/segments_test.o $O/rules_test.o $I -o $B/tests >> "$OUT/build.txt" 2>&1 &
$L $O/segments_bench.o $I -o $B/sb >> "$OUT/build.txt" 2>&1 &
$L $O/conformance.o $I -o $B/conf >> "$OUT/build.txt" 2>&1 &
wait; ls -la $B >> "$OUT/build.txt"
el linked
# the normal path's SASS: main's delta_pipeline_kernel (gated_delta, delta; bf16) against this branch's Outputs = true
for bin in whole_ab_main whole_ab_comb15; do
  cuobjdump -sass $O/$bin | awk '/Function : /{p = ($0 ~ /delta_pipeline_kernel/ && $0 !~ /Lb0E/)} p' | grep -v "Function :" > $B/$bin.pipeline.sass
done
echo "pipeline normal-path SASS lines: $(wc -l < $B/whole_ab_main.pipeline.sass) main, $(wc -l < $B/whole_ab_comb15.pipeline.sass) comb15; identical: $(cmp -s $B/whole_ab_main.pipeline.sass $B/whole_ab_comb15.pipeline.sass && echo yes || echo NO)" >> "$OUT/build.txt"
cuobjdump -res-usage $B/sb 2>&1 | grep -A1 "staged_combine\|combine_kernel" | head -6 >> "$OUT/build.txt"
el timings
for round in 1 2; do $O/whole_ab_main >> "$OUT/whole_ab.jsonl" 2>&1; $O/whole_ab_comb15 >> "$OUT/whole_ab.jsonl" 2>&1; done
timeout 60 $B/sb --states > "$OUT/states.jsonl" 2>&1; echo "states rc $?" >> "$OUT/build.txt"
el checks
( timeout 90 $B/tests -sf="*segments_test*" > /tmp/t1.log 2>&1; echo "segments_test rc $?" >> /tmp/t1.log ) &
( timeout 90 $B/tests -sf="*rules_test*" > /tmp/t2.log 2>&1; echo "rules_test rc $?" >> /tmp/t2.log ) &
( timeout 60 $B/conf $C/fla $C/linea > /tmp/conf.log 2>&1; echo "conf rc $?" >> /tmp/conf.log; tail -5 /tmp/conf.log > "$OUT/conformance.log" ) &
( timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests "-tc=CUDA chunk kernels: states only*,CUDA segment combine*" > /tmp/mc1.log 2>&1; echo "memcheck states-only, combine rc $?" >> /tmp/mc1.log ) &
( timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests "-tc=CUDA segmented chunkwise equals*" > /tmp/mc2.log 2>&1; echo "memcheck segmented rc $?" >> /tmp/mc2.log ) &
( timeout 90 compute-sanitizer --tool racecheck --kernel-regex kns=staged_combine_kernel --error-exitcode 9 $B/tests "-tc=CUDA segment combine*" > /tmp/rc1.log 2>&1; echo "racecheck staged_combine rc $?" >> /tmp/rc1.log
  timeout 60 compute-sanitizer --tool racecheck --kernel-regex kns=delta_pipeline_kernel --error-exitcode 9 $B/tests "-tc=CUDA chunk kernels: states only*" > /tmp/rc2.log 2>&1; echo "racecheck delta_pipeline rc $?" >> /tmp/rc2.log ) &
wait
for f in /tmp/t1.log /tmp/t2.log; do echo "--- $f"; grep -E "ERROR|error|FAIL|test cases|assertions|rc [0-9]|values|CHECK|REQUIRE" $f | head -40; done > "$OUT/tests.log"
for f in /tmp/mc1.log /tmp/mc2.log /tmp/rc1.log /tmp/rc2.log; do echo "--- $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rc [0-9]|test cases|assertions" $f | tail -5; done > "$OUT/checks.txt"
el done
