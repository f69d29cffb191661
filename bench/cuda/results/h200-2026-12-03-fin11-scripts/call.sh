#!/usr/bin/env bash
# The lead's final call of 2026-12-03's eighth session: the merged tree (main) built on the H200 and checked.
#   run: bash bench/cuda/results/h200-2026-12-03-fin11-scripts/call.sh   (carry .gpu/deps .gpu/conformance)
# 1. build (xargs -P 20): 7 instance units, the suite, conformance, bench, fuzz (binaries stay in /tmp/b while warm);
# 2. side by side: the CUDA suite, conformance, memcheck (backward bf16 over 32 chunks; sanitize: gated_delta),
#    racecheck (backward bf16 over 32 chunks), fuzz cases known to be hard (seeds 20261206/7);
# 3. alone on the GPU: bench --backward (8×4096, 1×32768), bench --chunk-only --v128-only.
set -u
R=$(pwd); G=$R/.gpu
export PATH=${CUDA_BIN:-/usr/local/cuda/bin}:$PATH
START=$(date +%s); LIMIT=${LIMIT:-420}
el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a $OUT/build.txt; }
left() { echo $(( LIMIT - ($(date +%s) - START) )); }
B=${BDIR:-/tmp/b}; mkdir -p $B/obj
export FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -I$R/tests -I$R/tools -I$G/deps -I$G/deps/eigen3"
export R
NCCL=""; for d in /usr/local/cuda/lib /usr/local/cuda/lib64; do [ -e $d/libnccl.so ] && { NCCL="-L$d -Xlinker -rpath=$d -lnccl"; break; }; done
[ -n "$NCCL" ] && export FLAGS="$FLAGS -DLINEA_TEST_NCCL"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $OUT/build.txt 2>&1
git -C $R log --oneline -1 >> $OUT/build.txt 2>&1
el build
# grad_ab for gdn2 (the per-key phase 1 A/B against main 07de2f4's kernel, bench/cuda/per_key_prep_v1.hpp), beside the build
( nice nvcc $FLAGS -I$R/include -DLINEA_CUDA_EXTERN_INSTANCES -DGRAD_AB_RULE=linea::gdn2 -c $R/bench/cuda/grad_ab.cu -o $B/ab_gdn2.o > $B/ab_gdn2.log 2>&1 || echo "FAILED: grad_ab gdn2" >> $OUT/build.txt ) &
XP=$!
# grad_ab for gated_delta: phase 4 of the library (prof11's loops, single chain) against main 07de2f4's (grad_ab_v0.hpp)
( nice nvcc $FLAGS -I$R/include -DLINEA_CUDA_EXTERN_INSTANCES -DGRAD_AB_RULE=linea::gated_delta -c $R/bench/cuda/grad_ab.cu -o $B/ab_gd.o > $B/ab_gd.log 2>&1 || echo "FAILED: grad_ab gated_delta" >> $OUT/build.txt ) &
XG=$!
{ for s in $R/tests/backend/cuda/instances/*.cu; do echo "I $s"; done
  for s in $R/tests/backend/cuda/*.cu $R/bench/cuda/bench_cuda.cu $R/tools/linea_cuda_conformance.cu $R/tests/backend/cuda/fuzz/cuda_fuzz.cu; do echo "E $s"; done; } |
  xargs -P 20 -L 1 sh -c 'o="$0/obj/$(basename "$2" .cu)$([ "$1" = I ] && echo .inst).o"; d=$([ "$1" = E ] && echo -DLINEA_CUDA_EXTERN_INSTANCES); nvcc $FLAGS -I$R/include $d -c "$2" -o "$o" > "$o.log" 2>&1 || echo "FAILED: $2"' $B >> $OUT/build.txt 2>&1
el link
L="nvcc -gencode=arch=compute_90a,code=sm_90a"; I=$(ls $B/obj/*.inst.o)
T=$B/linea_cuda_tests
O=$(ls $B/obj/*.o | grep -v -E 'inst.o|bench_cuda.o|linea_cuda_conformance.o|cuda_fuzz.o')
$L $O $I $NCCL -o $T >> $OUT/build.txt 2>&1 & P1=$!
$L $B/obj/linea_cuda_conformance.o $I -o $B/conf >> $OUT/build.txt 2>&1 & P2=$!
$L $B/obj/bench_cuda.o $I -o $B/bench >> $OUT/build.txt 2>&1 & P3=$!
$L $B/obj/cuda_fuzz.o $I -o $B/cuda_fuzz >> $OUT/build.txt 2>&1 & P4=$!
wait $P1 $P2 $P3 $P4
ls -la $T $B/conf $B/bench $B/cuda_fuzz >> $OUT/build.txt 2>&1; grep -h -E "error|FAILED" $OUT/build.txt $B/obj/*.log | head -8
wait $XP $XG; [ -e $B/ab_gdn2.o ] && $L $B/ab_gdn2.o $I -o $B/ab_gdn2 >> $OUT/build.txt 2>&1; [ -e $B/ab_gd.o ] && $L $B/ab_gd.o $I -o $B/ab_gd >> $OUT/build.txt 2>&1
el checks
( timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $B/ab_gdn2 --check > /tmp/s4.log 2>&1; echo "memcheck grad_ab --check gdn2 rc $?" >> /tmp/s4.log
  timeout 60 compute-sanitizer --tool racecheck --kernel-regex kns=per_key_prep --error-exitcode 9 $B/ab_gdn2 --check > /tmp/s5.log 2>&1; echo "racecheck (per_key_prep) grad_ab --check gdn2 rc $?" >> /tmp/s5.log ) &
C=$G/conformance
( timeout 150 $T > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
( timeout 90 $B/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
( timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=CUDA backward: bf16 over 32 chunks*" > /tmp/s1.log 2>&1; echo "memcheck backward bf16 over 32 chunks rc $?" >> /tmp/s1.log ) &
( timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=sanitize: gated_delta" > /tmp/s2.log 2>&1; echo "memcheck sanitize: gated_delta (CCQ chunkwise) rc $?" >> /tmp/s2.log ) &
( timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 $T "-tc=CUDA backward: bf16 over 32 chunks*" > /tmp/s3.log 2>&1; echo "racecheck backward bf16 over 32 chunks rc $?" >> /tmp/s3.log ) &
( for c in 2431 212 2518; do timeout 20 $B/cuda_fuzz --seed 20261207 --from $c --to $((c + 1)) 2>&1 | grep '^RESULT' | cut -c1-300; done
  for c in 77 212; do timeout 20 $B/cuda_fuzz --seed 20261206 --from $c --to $((c + 1)) 2>&1 | grep '^RESULT' | sed 's/^/seed 20261206 /' | cut -c1-300; done
  timeout 70 $B/cuda_fuzz --seed 20261203 --from 0 --to 400 --budget 60 > /tmp/fzr.log 2>&1; echo "fuzz seed 20261203 rc $?"
  grep '^RESULT' /tmp/fzr.log | awk '{print $3}' | sort | uniq -c; grep -E '^RESULT [0-9]+ FAIL|^BUDGET' /tmp/fzr.log | cut -c1-300 | head -20 ) > /tmp/fz.log 2>&1 &
wait
el collect
cp /tmp/s4.log $OUT/ab_gdn2_check.log
{ for f in /tmp/s1.log /tmp/s2.log /tmp/s3.log /tmp/s4.log /tmp/s5.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:|rc " $f; done; echo "-- fuzz"; cat /tmp/fz.log; } > $OUT/checks.txt 2>&1
grep -E "ERROR|FAILED|test cases|assertions|skipped|rc " $OUT/tests.log | head -20
grep -E '^FAIL' $OUT/conformance.log | head; tail -n 3 $OUT/conformance.log
cat $OUT/checks.txt
el grad_ab
[ -x $B/ab_gdn2 ] && { timeout 40 $B/ab_gdn2 > $OUT/ab.jsonl 2>&1; echo "ab gdn2 rc $?" >> $OUT/ab.jsonl; }
[ -x $B/ab_gd ] && { timeout 40 $B/ab_gd >> $OUT/ab.jsonl 2>&1; echo "ab gated_delta rc $?" >> $OUT/ab.jsonl; }
cut -c1-1500 $OUT/ab.jsonl
el bench-backward
[ $(left) -gt 20 ] && { timeout $(( $(left) - 5 > 70 ? 70 : $(left) - 5 )) $B/bench --backward > $OUT/bench_backward.jsonl 2>&1; echo "bench backward rc $?"; }
el bench-chunk
[ $(left) -gt 15 ] && { timeout $(( $(left) - 3 > 60 ? 60 : $(left) - 3 )) $B/bench --chunk-only --v128-only > $OUT/bench_chunk.jsonl 2>&1; echo "bench chunk rc $?"; }
el done
S=$R/bench/cuda/results/h200-2026-12-03-gpu10-scripts/show.py
python3 $S $OUT/bench_backward.jsonl bwd_ms; python3 $S $OUT/bench_chunk.jsonl ccq
