#!/usr/bin/env bash
# The lead's call of 2026-12-03's third session: the merged tree (io12, seg12, cpu12, kgrad12, the CUDA CCQ z = 0
# guard) built on the H200 and checked.   LIMIT=400 bash bench/cuda/results/h200-2026-12-03-fin12-scripts/call.sh
# (carry .gpu/deps .gpu/conformance)
# 1. build (xargs -P 20): 7 instance units, the suite, conformance, segments bench (FULL=1: bench, fuzz too); io_ab standalone;
# 2. side by side: the CUDA suite, conformance, memcheck (backward bf16 over 32 chunks; seg12's decay-only case;
#    io_ab --check), racecheck (decay_product_kernel), fuzz (known-hard cases, a fresh seed for 60 s);
# 3. alone on the GPU: (AB=1: grad_ab gated_delta, phase 4 vs main 861c7ef's) io_ab (phases 0 and 5 against main 861c7ef's), segments_bench --ab (seg12), bench --backward.
set -u
R=$(pwd); G=$R/.gpu
export PATH=${CUDA_BIN:-/usr/local/cuda/bin}:$PATH
START=$(date +%s); LIMIT=${LIMIT:-400}
el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a $OUT/build.txt; }
left() { echo $(( LIMIT - ($(date +%s) - START) )); }
B=/tmp/b; mkdir -p $B/obj
export FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -I$R/tests -I$R/tools -I$G/deps -I$G/deps/eigen3"
export R
NCCL=""; for d in /usr/local/cuda/lib /usr/local/cuda/lib64; do [ -e $d/libnccl.so ] && { NCCL="-L$d -Xlinker -rpath=$d -lnccl"; break; }; done
[ -n "$NCCL" ] && export FLAGS="$FLAGS -DLINEA_TEST_NCCL"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $OUT/build.txt 2>&1
el build
( nice nvcc $FLAGS -I$R/include $R/bench/cuda/io_ab.cu -o $B/io_ab > $B/io_ab.log 2>&1 || echo "FAILED: io_ab" >> $OUT/build.txt ) &
XI=$!
XG=$XI
if [ -n "${AB:-}" ]; then  # grad_ab for gated_delta: phase 4 (grad12) against main 861c7ef's (grad_ab_v0.hpp)
  ( nice nvcc $FLAGS -I$R/include -DLINEA_CUDA_EXTERN_INSTANCES -DGRAD_AB_RULE=linea::gated_delta -c $R/bench/cuda/grad_ab.cu -o $B/ab_gd.o > $B/ab_gd.log 2>&1 || echo "FAILED: grad_ab gated_delta" >> $OUT/build.txt ) &
  XG=$!
fi
{ for s in $R/tests/backend/cuda/instances/*.cu; do echo "I $s"; done
  for s in $R/tests/backend/cuda/*.cu $R/bench/cuda/segments_bench.cu $R/tools/linea_cuda_conformance.cu ${FULL:+$R/bench/cuda/bench_cuda.cu $R/tests/backend/cuda/fuzz/cuda_fuzz.cu}; do echo "E $s"; done; } |
  timeout 300 xargs -P 20 -L 1 sh -c 'o="$0/obj/$(basename "$2" .cu)$([ "$1" = I ] && echo .inst).o"; d=$([ "$1" = E ] && echo -DLINEA_CUDA_EXTERN_INSTANCES); nvcc $FLAGS -I$R/include $d -c "$2" -o "$o" > "$o.log" 2>&1 || echo "FAILED: $2"' $B >> $OUT/build.txt 2>&1
el link
L="nvcc -gencode=arch=compute_90a,code=sm_90a"; I=$(ls $B/obj/*.inst.o)
T=$B/linea_cuda_tests
O=$(ls $B/obj/*.o | grep -v -E 'inst.o|bench_cuda.o|segments_bench.o|linea_cuda_conformance.o|cuda_fuzz.o')
$L $O $I $NCCL -o $T >> $OUT/build.txt 2>&1 & P1=$!
$L $B/obj/linea_cuda_conformance.o $I -o $B/conf >> $OUT/build.txt 2>&1 & P2=$!
P3=; P4=; if [ -n "${FULL:-}" ]; then $L $B/obj/bench_cuda.o $I -o $B/bench >> $OUT/build.txt 2>&1 & P3=$!; $L $B/obj/cuda_fuzz.o $I -o $B/cuda_fuzz >> $OUT/build.txt 2>&1 & P4=$!; fi
$L $B/obj/segments_bench.o $I -o $B/sb >> $OUT/build.txt 2>&1 & P5=$!
wait $P1 $P2 $P3 $P4 $P5 $XI $XG
[ -e $B/ab_gd.o ] && $L $B/ab_gd.o $I -o $B/ab_gd >> $OUT/build.txt 2>&1
ls -la $T $B/conf $B/bench $B/cuda_fuzz $B/sb $B/io_ab >> $OUT/build.txt 2>&1; grep -h -E "error|FAILED" $OUT/build.txt $B/obj/*.log $B/io_ab.log | head -8
el checks
C=$G/conformance
( timeout 170 $T > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
( timeout 90 $B/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
( timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=CUDA backward: bf16 over 32 chunks*" > /tmp/s1.log 2>&1; echo "memcheck backward bf16 over 32 chunks rc $?" >> /tmp/s1.log ) &
( timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=CUDA segmented chunkwise: decay-only*" > /tmp/s2.log 2>&1; echo "memcheck segmented decay-only rc $?" >> /tmp/s2.log ) &
( timeout 90 compute-sanitizer --tool racecheck --kernel-name kns=decay_product_kernel --error-exitcode 9 $T "-tc=CUDA segmented chunkwise: decay-only*" > /tmp/s3.log 2>&1; echo "racecheck decay_product_kernel rc $?" >> /tmp/s3.log ) &
( timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $B/io_ab --check > /tmp/s4.log 2>&1; echo "memcheck io_ab --check rc $?" >> /tmp/s4.log ) &
[ -x $B/cuda_fuzz ] && ( for c in 2431 212 2518; do timeout 20 $B/cuda_fuzz --seed 20261207 --from $c --to $((c + 1)) 2>&1 | grep '^RESULT' | cut -c1-300; done
  timeout 70 $B/cuda_fuzz --seed 20261204 --from 0 --to 400 --budget 60 > /tmp/fzr.log 2>&1; echo "fuzz seed 20261204 rc $?"
  grep '^RESULT' /tmp/fzr.log | awk '{print $3}' | sort | uniq -c; grep -E '^RESULT [0-9]+ FAIL|^BUDGET' /tmp/fzr.log | cut -c1-300 | head -20 ) > /tmp/fz.log 2>&1 &
[ -x $B/ab_gd ] && ( timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_gd --check > /tmp/s5.log 2>&1; echo "memcheck grad_ab --check gated_delta rc $?" >> /tmp/s5.log ) &
wait
el collect
cp /tmp/s4.log $OUT/io_ab_check.log
{ for f in /tmp/s1.log /tmp/s2.log /tmp/s3.log /tmp/s4.log /tmp/s5.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:|rc " $f; done; echo "-- fuzz"; cat /tmp/fz.log; } > $OUT/checks.txt 2>&1
grep -E "ERROR|FAILED|test cases|assertions|skipped|rc " $OUT/tests.log | head -20
grep -E '^FAIL' $OUT/conformance.log | head; tail -n 3 $OUT/conformance.log
cat $OUT/checks.txt
el grad_ab
[ -x $B/ab_gd ] && [ $(left) -gt 60 ] && { timeout 50 $B/ab_gd > $OUT/grad_ab.jsonl 2>&1; echo "grad_ab rc $?" >> $OUT/grad_ab.jsonl; cut -c1-1200 $OUT/grad_ab.jsonl; }
el io_ab
[ -x $B/io_ab ] && [ $(left) -gt 30 ] && { timeout 40 $B/io_ab > $OUT/io_ab.jsonl 2>&1; echo "io_ab rc $?" >> $OUT/io_ab.jsonl; cut -c1-200 $OUT/io_ab.jsonl | head -5; grep -o '"phase[05]_[a-z]*_ms":[0-9.]*' $OUT/io_ab.jsonl | head -20 | tr '\n' ' '; echo; }
el segments-ab
[ $(left) -gt 45 ] && { timeout 45 $B/sb --ab > $OUT/seg_ab.jsonl 2>&1; echo "seg ab rc $?" >> $OUT/seg_ab.jsonl; grep -E '"kind":"(ab|pass_m)"' $OUT/seg_ab.jsonl | cut -c1-260; tail -1 $OUT/seg_ab.jsonl; }
el bench-backward
[ -x $B/bench ] && [ $(left) -gt 20 ] && { timeout $(( $(left) - 5 > 70 ? 70 : $(left) - 5 )) $B/bench --backward > $OUT/bench_backward.jsonl 2>&1; echo "bench backward rc $?"; }
el done
python3 $R/bench/cuda/results/h200-2026-12-03-gpu10-scripts/show.py $OUT/bench_backward.jsonl bwd_ms 2>/dev/null | head -30
