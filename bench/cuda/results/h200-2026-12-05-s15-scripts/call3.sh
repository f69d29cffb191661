#!/usr/bin/env bash
# Session 15, call 3 (carry [".gpu/s15f"]): one call for what call 2 was to do plus the final tree's check, since
# cold starts were refused for ~40 min:
#   1. the CI dry run's linea_cuda_tests and linea_cuda_conformance of branch flip15 (session 13's switches on by
#      default, extern phase instances as CI builds them), side by side;
#   2. alone on the GPU, interleaved, two rounds: linea_cuda_bench --backward of main's defaults (bench_base) and of
#      the switches on (bench_all) for kda, gdn2, gla (8×4096, 1×32768) and gated_delta 8×4096 (the control);
#   3. s13_ab --long (each switch's kernels on one workspace), then ncu's per-kernel times of one backward, while
#      time is left (LIMIT seconds in all).
set -u
S=${S:-.gpu/s15f}; B=/tmp/s15; mkdir -p $B/conf; LIMIT=${LIMIT:-560}; T0=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
for f in linea_cuda_tests linea_cuda_conformance bench_all bench_base s13_ab; do xz -dc $S/$f.xz > $B/$f && chmod +x $B/$f; done
tar xJf $S/conf.tar.xz -C $B/conf
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
( LINEA_BACKWARD_ERRORS=1 timeout 200 $B/linea_cuda_tests > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
# (session 16's carry adds conf/options: tools/conformance/option_cases.py's g_gamma, normalize and in-kernel gate cases)
OPT=; [ -d $B/conf/options ] && OPT=$B/conf/options
( timeout 150 $B/linea_cuda_conformance $B/conf/conformance/fla $B/conf/conformance/linea $OPT > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
wait
grep -E "test cases|assertions|rc " $OUT/tests.log; grep -B2 -A10 -E "ERROR:|FAILED" $OUT/tests.log | head -40
grep -E '^FAIL' $OUT/conformance.log | head; tail -n 2 $OUT/conformance.log
echo "suite done at $(( $(date +%s) - T0 )) s"
for round in 1 2; do for bin in bench_base bench_all; do
  for r in kda:8 kda:1 gdn2:8 gdn2:1 gla:8 gla:1 gated_delta_rule:8; do
    [ $(left) -gt 40 ] || break 3
    LINEA_BENCH_BACKWARD=$r timeout 40 $B/$bin --backward 2>&1 | grep '"kind":"backward"' | sed "s/^{/{\"bin\":\"$bin\",\"round\":$round,/" >> $OUT/ab.jsonl
  done; done; done
echo "benches done at $(( $(date +%s) - T0 )) s"; cat $OUT/ab.jsonl
L=$(( $(left) - 10 )); [ $L -gt 30 ] && { timeout $L $B/s13_ab --long > $OUT/s13_long.jsonl 2>&1; echo "s13_ab --long rc $?" >> $OUT/s13_long.jsonl; cat $OUT/s13_long.jsonl; }
for r in gated_delta_rule:8 kda:8; do
  L=$(( $(left) - 5 )); [ $L -gt 20 ] || break
  LINEA_BENCH_BACKWARD=$r timeout $L ncu --csv --metrics gpu__time_duration.sum --kernel-name-base demangled -k regex:bwd:: -c 40 \
    $B/bench_all --backward > $OUT/ncu_${r%%:*}.csv 2> /dev/null; echo "ncu $r rc $?"; done
echo "done at $(( $(date +%s) - T0 )) s"; date
