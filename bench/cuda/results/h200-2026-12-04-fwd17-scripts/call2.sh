#!/usr/bin/env bash
# fwd17 call 2 (issue #15): the library on main's kernel with Q's fragments shared by Q S and P (v2, the balanced
# kernel of call 1, in the bench). Objects built on the workstation by build_local.sh and carried as objs.tar.xz with
# the fwd17_ab driver (standalone) and the conformance cases of linear_attn and simple_gla (conf/). Links the suite's
# forward units (rules, segments, tiles, neg_inf, sanitize, launch_options) against the instance units (additive and
# simple_gla with the new scalar_chunk_kernel.hpp), then side by side: the suite's cases that run the kernel, the
# conformance runner, memcheck / racecheck; then alone on the GPU: fwd17_ab --check / --time / --library, ncu.
# Run in the copy's root (.gpu/fwd17). LIMIT: seconds of command.
set -u
R=$(pwd)
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s); LIMIT=${LIMIT:-185}
el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a "$OUT/steps.txt"; }
left() { echo $(( LIMIT - ($(date +%s) - START) )); }
B=/tmp/fwd17; mkdir -p $B/obj
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >> "$OUT/steps.txt" 2>&1
tar -C $B/obj -xJf $R/objs.tar.xz
el link
L="nvcc -gencode=arch=compute_90a,code=sm_90a"; I=$(ls $B/obj/*.inst.o)
TU=""; for t in main rules_test segments_test tiles_test neg_inf_test sanitize_test launch_options_test; do
  [ -e $B/obj/$t.o ] && TU="$TU $B/obj/$t.o"; done
echo "suite units:$TU" >> "$OUT/steps.txt"
$L $TU $I -o $B/t > $B/link_t.log 2>&1 &
$L $B/obj/conformance.o $I -o $B/conf > $B/link_c.log 2>&1 &
wait
cat $B/link_t.log $B/link_c.log | head -20 >> "$OUT/steps.txt"
AB=$B/obj/fwd17_ab; chmod +x $AB
el ab-check
timeout 40 $AB --check > "$OUT/ab_check.jsonl" 2>&1; echo "ab --check rc $?" >> "$OUT/ab_check.jsonl"
tail -2 "$OUT/ab_check.jsonl"
el checks
TC="cuda additive*,cuda simple_gla*,cuda: additive*,cuda: partial*,cuda: the inputs*,CUDA seg*,CUDA chunk kernels*,CUDA context*,cuda: a log decay*,cuda: a NaN*,sanitize: additive,cuda::launch*"
( timeout 90 $B/t "-tc=$TC" > "$OUT/tests.log" 2>&1; echo "tests rc $?" >> "$OUT/tests.log" ) &
( timeout 90 $B/conf $R/conf/fla $R/conf/linea > $B/conf.log 2>&1; echo "conf rc $?" >> $B/conf.log ) &
( timeout 80 compute-sanitizer --tool memcheck --kernel-regex kns=scalar_chunk_kernel --error-exitcode 9 $B/t \
    "-tc=sanitize: additive,cuda additive: chunkwise*,cuda simple_gla: chunkwise*,cuda: additive rule with the normaliser on the 64-token kernel*,cuda: a NaN or inf input poisons only what the recurrence poisons (scalar*" > $B/mc.log 2>&1; echo "memcheck suite rc $?" >> $B/mc.log ) &
( timeout 80 compute-sanitizer --tool racecheck --kernel-regex kns=scalar_chunk_kernel --error-exitcode 9 $B/t \
    "-tc=cuda additive: chunkwise*,cuda simple_gla: chunkwise*,cuda: additive rule with the normaliser on the 64-token kernel*" > $B/rc.log 2>&1; echo "racecheck suite rc $?" >> $B/rc.log ) &
( timeout 80 compute-sanitizer --tool memcheck --kernel-regex kns=scalar_chunk_kernel --error-exitcode 9 $AB --check > $B/mcab.log 2>&1; echo "memcheck fwd17_ab --check rc $?" >> $B/mcab.log ) &
wait
{ grep -h -E "test cases|assertions|rc " "$OUT/tests.log"; echo "-- conformance"; tail -4 $B/conf.log
  for f in mc rc mcab; do echo "-- $f"; grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:|assertions:|rc |mismatches" $B/$f.log; grep -m5 -h -E "Invalid|hazard|Error" $B/$f.log; done; } > "$OUT/checks.txt" 2>&1
cp $B/conf.log "$OUT/conformance.log"
cat "$OUT/checks.txt"
el time
timeout 60 $AB --time > "$OUT/ab_time.jsonl" 2>&1; echo "ab --time rc $?" >> "$OUT/ab_time.jsonl"
timeout 40 $AB --library >> "$OUT/ab_time.jsonl" 2>&1; echo "ab --library rc $?" >> "$OUT/ab_time.jsonl"
cat "$OUT/ab_time.jsonl"
el ncu
if [ $(left) -gt 45 ] && command -v ncu > /dev/null; then
  timeout $(( $(left) - 10 )) ncu --set full -k regex:scalar_chunk_kernel -o $B/prof $AB --once > $B/ncu_run.txt 2>&1; echo "ncu rc $?" >> $B/ncu_run.txt
  ncu -i $B/prof.ncu-rep --page details > "$OUT/ncu_details.txt" 2>&1
  ncu -i $B/prof.ncu-rep --page raw --csv > $B/ncu_raw.csv 2>&1
  ncu -i $B/prof.ncu-rep --page source --csv --print-source sass > $B/ncu_source.csv 2>&1
  tar -C $B -cJf "$OUT/ncu_raw_source.tar.xz" ncu_raw.csv ncu_source.csv
  tail -3 $B/ncu_run.txt >> "$OUT/steps.txt"
fi
el done
