#!/usr/bin/env bash
# fwd7's second device call (issue #15, 2026-12-02): build the branch's CUDA instances, rules_test, segments_test,
# segments_bench and the conformance runner on the device (sm_90a, 16 jobs); then the CUDA consistency suite of
# rules_test.cu and segments_test.cu, conformance, memcheck on the chunkwise CCQ subcases and the segmented cases,
# CCQ A/B against main (main's instances from the lead's session-3 CI build, linked with call 1's segments_bench.o),
# the segment_tokens sweep and ncu's per-kernel split of the branch.
set -u
cd "$(dirname "$0")"
D=$PWD; R=$(cd .. && pwd); C=$(cd ../../conformance && pwd); DEPS=$(cd ../../deps && pwd)
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv,noheader
B=/tmp/b; mkdir -p $B/base $B/obj
tar -xJf $D/base_bins.tar.xz -C $B/base
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $D/segments_bench.o $B/base/liblinea_cuda_instances.a -o $B/sb_base || echo "link base FAILED"
el build
export FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$DEPS -I$DEPS/eigen3"
{ for s in $R/tests/backend/cuda/instances/*.cu; do echo "I $s"; done
  for s in $R/tests/backend/cuda/rules_test.cu $R/tests/backend/cuda/segments_test.cu $R/tools/linea_cuda_conformance.cu $R/bench/cuda/segments_bench.cu; do echo "E $s"; done; } |
  xargs -P 16 -L 1 sh -c 'o=/tmp/b/obj/$(basename "$2" .cu)$([ "$1" = I ] && echo .inst).o; d=$([ "$1" = E ] && echo -DLINEA_CUDA_EXTERN_INSTANCES); nvcc $FLAGS $d -c "$2" -o "$o" || echo "FAILED: $2"' _ > $OUT/build.log 2>&1
el link
grep -E "FAILED|error|spill" $OUT/build.log | head -20
cd $B; I=$(ls obj/*.inst.o)
$L obj/segments_bench.o $I -o sb_new; $L base/main.o obj/rules_test.o $I -o tests; $L base/main.o obj/segments_test.o $I -o segtests
$L obj/linea_cuda_conformance.o $I -o conf
ls
el checks
( timeout 110 ./tests > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
( timeout 110 ./segtests > $OUT/segtests.log 2>&1; echo "segtests rc $?" >> $OUT/segtests.log ) &
( timeout 60 ./conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
for r in gated_delta gla additive; do
  ( timeout 110 compute-sanitizer --tool memcheck --error-exitcode 9 ./tests "-tc=cuda $r: chunkwise*" "-sc=CCQ read*" > /tmp/memcheck_$r.log 2>&1; echo "memcheck $r rc $?" >> /tmp/memcheck_$r.log ) &
done
( timeout 110 compute-sanitizer --tool memcheck --error-exitcode 9 ./segtests "-tc=CUDA segmented*" > /tmp/memcheck_seg.log 2>&1; echo "memcheck segmented rc $?" >> /tmp/memcheck_seg.log ) &
wait
el collect
grep -E "ERROR|FAILED|test cases|assertions|rc " $OUT/tests.log | head -20
grep -E "ERROR|FAILED|test cases|assertions|rc " $OUT/segtests.log | head -20
grep -E '^FAIL' $OUT/conformance.log | head; tail -n 3 $OUT/conformance.log
for r in gated_delta gla additive seg; do grep -hE "ERROR SUMMARY|test cases|rc " /tmp/memcheck_$r.log; grep -m3 -E 'Invalid|Error' /tmp/memcheck_$r.log; done
el ccq-ab
for x in new base new base; do timeout 30 ./sb_$x --ccq > /tmp/ccq.tmp 2>&1; sed "s/\"kind\":\"ccq\"/\"kind\":\"ccq\",\"run\":\"$x\"/" /tmp/ccq.tmp >> $OUT/ccq_ab.jsonl; echo "== $x"; sed -E 's/.*"rule":"([a-z_0-9]+)".*"identity_ms":([0-9.]+),"ccq_ms":([0-9.]+),"ratio":([0-9.]+).*/\1 \2 \3 \4/' /tmp/ccq.tmp; done
el sweep
timeout 60 ./sb_new --sweep > $OUT/sweep.jsonl 2>&1; echo "sweep rc $?"
sed -E 's/.*"rule":"([a-z_0-9]+)","shape":"([0-9x]+)","segment_tokens":(-?[0-9]+),"piece":([0-9]+),"ms":([0-9.]+).*/\1 \2 \3 \4 \5/' $OUT/sweep.jsonl | tr '\n' ';'; echo
el ncu-new
NCU="ncu --clock-control none --metrics gpu__time_duration.sum --csv"
timeout 60 $NCU ./sb_new --once > /tmp/ncu_new.csv 2> /tmp/ncu_new.err; echo "ncu new rc $?"; tail -n 2 /tmp/ncu_new.err
python3 $D/ncu_sum.py /tmp/ncu_new.csv > $OUT/ncu_new.txt 2>&1 || cp /tmp/ncu_new.csv $OUT/
awk '$NF > 15' $OUT/ncu_new.txt | head -70 | cut -c1-110
el done
