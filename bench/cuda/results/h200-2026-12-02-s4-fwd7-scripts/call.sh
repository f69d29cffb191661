#!/usr/bin/env bash
# fwd7's device call (issue #15, 2026-12-02): build the branch's CUDA instances, rules_test and the conformance runner on
# the device (sm_90a, 14 jobs); while they build, the baseline (main's instances from the lead's session-3 CI build,
# linked with this branch's segments_bench.o) is split per kernel by ncu and timed; then the branch: the CUDA
# consistency suite of rules_test.cu, conformance, memcheck on the chunkwise CCQ subcases, CCQ A/B (base, branch,
# base, branch), ncu's per-kernel split, and the segment_tokens sweep.
set -u
cd "$(dirname "$0")"
D=$PWD; R=$(cd .. && pwd); C=$(cd ../../conformance && pwd); DEPS=$(cd ../../deps && pwd)
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv,noheader
which ncu compute-sanitizer
B=/tmp/b; mkdir -p $B/base $B/obj
tar -xJf $D/base_bins.tar.xz -C $B/base
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $D/segments_bench.o $B/base/liblinea_cuda_instances.a -o $B/sb_base || echo "link base FAILED"
el build-bg
export FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$DEPS -I$DEPS/eigen3"
( { for s in $R/tests/backend/cuda/instances/*.cu; do echo "I $s"; done
    for s in $R/tests/backend/cuda/rules_test.cu $R/tools/linea_cuda_conformance.cu; do echo "E $s"; done; } |
  xargs -P 14 -L 1 sh -c 'o=/tmp/b/obj/$(basename "$2" .cu)$([ "$1" = I ] && echo .inst).o; d=$([ "$1" = E ] && echo -DLINEA_CUDA_EXTERN_INSTANCES); nvcc $FLAGS $d -c "$2" -o "$o" || echo "FAILED: $2"' _ > $OUT/build.log 2>&1
  echo "build done at $(( $(date +%s) - START )) s" >> $OUT/build.log ) &
BUILD=$!
if [ -z "${SKIP_BASE:-}" ]; then
el base-ncu
NCU="ncu --clock-control none --metrics gpu__time_duration.sum --csv"
timeout 70 $NCU $B/sb_base --once > /tmp/ncu_base.csv 2> /tmp/ncu_base.err; echo "ncu base rc $?"; tail -n 2 /tmp/ncu_base.err; python3 $D/ncu_sum.py /tmp/ncu_base.csv > /tmp/ncu_base.txt 2>&1; wc -l /tmp/ncu_base.txt
timeout 30 $B/sb_base --ccq > /tmp/ccq_bb.jsonl 2>&1; sed 's/"kind":"ccq"/"kind":"ccq","run":"base-during-build"/' /tmp/ccq_bb.jsonl >> $OUT/ccq_ab.jsonl; echo "ccq base (during build) rc $?"
el "sweep during the build (segments code as on main)"
timeout 80 $B/sb_base --sweep > $OUT/sweep.jsonl 2>&1; echo "sweep rc $?"
sed -E 's/.*"rule":"([a-z_0-9]+)","shape":"([0-9x]+)","segment_tokens":(-?[0-9]+),"piece":([0-9]+),"ms":([0-9.]+).*/\1 \2 \3 \4 \5/' $OUT/sweep.jsonl
fi
NCU="ncu --clock-control none --metrics gpu__time_duration.sum --csv"
wait $BUILD
el link
cat $OUT/build.log | grep -E "FAILED|error|spill|build done" | head -20
cd $B; I=$(ls obj/*.inst.o)
$L $D/segments_bench.o $I -o sb_new && $L base/main.o obj/rules_test.o $I -o tests && $L obj/linea_cuda_conformance.o $I -o conf
ls
el checks
( timeout 110 ./tests > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
( timeout 60 ./conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
for r in gated_delta gla additive; do
  ( timeout 110 compute-sanitizer --tool memcheck --error-exitcode 9 ./tests "-tc=cuda $r: chunkwise*" "-sc=CCQ read*" > /tmp/memcheck_$r.log 2>&1; echo "memcheck $r rc $?" >> /tmp/memcheck_$r.log ) &
done
wait
el collect
grep -E "ERROR|FAILED|test cases|assertions|rc " $OUT/tests.log | head -30
grep -E '^FAIL' $OUT/conformance.log | head; grep -ci ccq $OUT/conformance.log; tail -n 3 $OUT/conformance.log
for r in gated_delta gla additive; do grep -hE "ERROR SUMMARY|test cases|rc " /tmp/memcheck_$r.log; grep -m3 -E 'Invalid|Error' /tmp/memcheck_$r.log; done
el ccq-ab
for x in new base new base; do timeout 30 ./sb_$x --ccq > /tmp/ccq.tmp 2>&1; sed "s/\"kind\":\"ccq\"/\"kind\":\"ccq\",\"run\":\"$x\"/" /tmp/ccq.tmp >> $OUT/ccq_ab.jsonl; echo "== $x"; sed -E 's/.*"rule":"([a-z_0-9]+)".*"identity_ms":([0-9.]+),"ccq_ms":([0-9.]+),"ratio":([0-9.]+).*/\1 \2 \3 \4/' /tmp/ccq.tmp; done
el ncu-new
timeout 60 $NCU ./sb_new --once > /tmp/ncu_new.csv 2> /tmp/ncu_new.err; echo "ncu new rc $?"; tail -n 2 /tmp/ncu_new.err; python3 $D/ncu_sum.py /tmp/ncu_new.csv > $OUT/ncu_new.txt 2>&1; cp /tmp/ncu_base.txt $OUT/; awk '$NF > 15' /tmp/ncu_base.txt | head -60 | cut -c1-120; echo ---; awk '$NF > 15' $OUT/ncu_new.txt | head -60 | cut -c1-120
[ -s $OUT/ncu_new.txt ] || cp /tmp/ncu_new.csv /tmp/ncu_base.csv $OUT/
el done
