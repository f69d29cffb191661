#!/usr/bin/env bash
# gpu10's one device call (2026-12-03, seventh session): grad9 + prep9-lean + ccq9 merged onto main ee65188.
# Built on the lead's s6-final-call template. The branch's tree is rsynced to .gpu/gpu10 (this script lies at
# .gpu/gpu10/bench/cuda/results/h200-2026-12-03-gpu10-scripts/); .gpu/deps and .gpu/conformance beside it;
# .gpu/gpu10/ab_main/include = `git archive ee65188 include` (main's headers, ccq_ab's "main" side).
#   bash .gpu/gpu10/bench/cuda/results/h200-2026-12-03-gpu10-scripts/call.sh   (carry .gpu/gpu10 .gpu/deps .gpu/conformance)
# 1. build (xargs -P 24): 7 instance units, the suite, conformance, bench, fuzz; beside them (niced) grad_ab for kda and
#    gated_delta (extern instances) and ccq_ab (side main over main's headers, side new, same_grid.cu);
# 2. side by side: the CUDA suite, conformance, memcheck (backward bf16 over 32 chunks; sanitize: gated_delta = the
#    CCQ chunkwise read), fuzz 2431 212 2518 (seed 20261207), 77 and 212 (seed 20261206); once the extras are linked:
#    memcheck + racecheck (per-key kernels) of grad_ab --check for kda, memcheck of ccq_ab small, ccq_ab check;
# 3. alone on the GPU: grad_ab kda, gated_delta; ccq_ab time; bench --backward; bench --chunk-only --v128-only.
set -u
cd "$(dirname "$0")"
F=$PWD; R=$(cd ../../../.. && pwd); G=$(cd $R/.. && pwd)
export PATH=${CUDA_BIN:-/usr/local/cuda/bin}:$PATH
START=$(date +%s); LIMIT=${LIMIT:-250}
el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a $OUT/build.txt; }
left() { echo $(( LIMIT - ($(date +%s) - START) )); }
B=${BDIR:-/tmp/b}; mkdir -p $B/obj $B/x
export FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -I$R/tests -I$R/tools -I$G/deps -I$G/deps/eigen3"
export R
NCCL=""; for d in /usr/local/cuda/lib /usr/local/cuda/lib64; do [ -e $d/libnccl.so ] && { NCCL="-L$d -Xlinker -rpath=$d -lnccl"; break; }; done
[ -n "$NCCL" ] && export FLAGS="$FLAGS -DLINEA_TEST_NCCL"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $OUT/build.txt 2>&1
el build
# extras, niced, in the background
{ for r in kda gated_delta; do echo "AB $r"; done; echo "CS main"; echo "CS new"; echo "CM x"; echo "CG x"; } |
  xargs -P 8 -L 1 sh -c 'cd '$B'/x; case "$0" in
    AB) nice nvcc $FLAGS -I$R/include -DLINEA_CUDA_EXTERN_INSTANCES -DGRAD_AB_RULE=linea::$1 -c $R/bench/cuda/grad_ab.cu -o ab_$1.o > ab_$1.log 2>&1 || echo "FAILED: grad_ab $1";;
    CS) inc=$R/include; [ "$1" = main ] && inc=$R/ab_main/include
        nice nvcc $FLAGS -I$inc -Dlinea=linea_$1 -DAB_SIDE=$1 -c $R/bench/cuda/ccq_ab/side.cu -o side_$1.o > side_$1.log 2>&1 || echo "FAILED: side $1";;
    CM) nice nvcc $FLAGS -c $R/bench/cuda/ccq_ab/main.cu -o ccq_main.o > ccq_main.log 2>&1 || echo "FAILED: ccq main";;
    CG) nice nvcc $FLAGS -c $R/bench/cuda/ccq_ab/same_grid.cu -o same_grid.o > same_grid.log 2>&1 || echo "FAILED: same_grid";;
  esac' > $B/x/extras.txt 2>&1 &
XP=$!
{ for s in $R/tests/backend/cuda/instances/*.cu; do echo "I $s"; done
  for s in $R/tests/backend/cuda/*.cu $R/bench/cuda/bench_cuda.cu $R/tools/linea_cuda_conformance.cu $R/tests/backend/cuda/fuzz/cuda_fuzz.cu; do echo "E $s"; done; } |
  xargs -P 24 -L 1 sh -c 'o="$0/obj/$(basename "$2" .cu)$([ "$1" = I ] && echo .inst).o"; d=$([ "$1" = E ] && echo -DLINEA_CUDA_EXTERN_INSTANCES); nvcc $FLAGS -I$R/include $d -c "$2" -o "$o" > "$o.log" 2>&1 || echo "FAILED: $2"' $B >> $OUT/build.txt 2>&1
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
# the extras' links, once they are compiled (in the background; the checks below start now)
( while kill -0 $XP 2>/dev/null; do sleep 1; done
  cd $B/x; for r in kda gated_delta; do [ -e ab_$r.o ] && $L ab_$r.o $I -o ab_$r; done
  [ -e side_main.o ] && [ -e side_new.o ] && $L ccq_main.o side_main.o side_new.o same_grid.o -o ccq_ab
  touch $B/x/done ) > $B/x/link.txt 2>&1 &
el checks
C=$G/conformance
( timeout 120 $T > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
( timeout 60 $B/conf $C/fla $C/linea > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
( timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=CUDA backward: bf16 over 32 chunks*" > /tmp/s1.log 2>&1; echo "memcheck backward bf16 over 32 chunks rc $?" >> /tmp/s1.log ) &
( timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $T "-tc=sanitize: gated_delta" > /tmp/s2.log 2>&1; echo "memcheck sanitize: gated_delta (CCQ chunkwise) rc $?" >> /tmp/s2.log ) &
( for c in 2431 212 2518; do timeout 20 $B/cuda_fuzz --seed 20261207 --from $c --to $((c + 1)) 2>&1 | grep '^RESULT' | cut -c1-300; done
  for c in 77 212; do timeout 20 $B/cuda_fuzz --seed 20261206 --from $c --to $((c + 1)) 2>&1 | grep '^RESULT' | sed 's/^/seed 20261206 /' | cut -c1-300; done > /tmp/fz2.log 2>&1; cat /tmp/fz2.log ) > /tmp/fz.log 2>&1 &
( for i in $(seq 100); do [ -e $B/x/done ] && break; sleep 1; done
  timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 $B/x/ab_kda --check > /tmp/s3.log 2>&1; echo "memcheck grad_ab --check kda rc $?" >> /tmp/s3.log
  timeout 40 compute-sanitizer --tool racecheck --kernel-regex kns=per_key --error-exitcode 9 $B/x/ab_kda --check > /tmp/s4.log 2>&1; echo "racecheck (per_key kernels) grad_ab --check kda rc $?" >> /tmp/s4.log ) &
( for i in $(seq 100); do [ -e $B/x/done ] && break; sleep 1; done
  timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 $B/x/ccq_ab small > /tmp/s5.log 2>&1; echo "memcheck ccq_ab small rc $?" >> /tmp/s5.log
  timeout 40 $B/x/ccq_ab check > $OUT/ccq_ab.jsonl 2>&1; echo "ccq_ab check rc $?" >> $OUT/ccq_ab.jsonl ) &
wait
el collect
{ cat $B/x/extras.txt $B/x/link.txt; for f in /tmp/s1.log /tmp/s2.log /tmp/s3.log /tmp/s4.log /tmp/s5.log; do grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:|rc " $f; done; echo "-- fuzz"; cat /tmp/fz.log; } > $OUT/checks.txt 2>&1
grep -E "ERROR|FAILED|test cases|assertions|skipped|rc " $OUT/tests.log | head -20
grep -E '^FAIL' $OUT/conformance.log | head; tail -n 3 $OUT/conformance.log
cat $OUT/checks.txt
el timing
for r in kda gated_delta; do
  [ $(left) -gt 30 ] && [ -x $B/x/ab_$r ] && { timeout 35 $B/x/ab_$r >> $OUT/ab.jsonl 2>&1 || echo "ab $r rc $?" >> $OUT/ab.jsonl; }
done
el ccq_ab
[ $(left) -gt 25 ] && [ -x $B/x/ccq_ab ] && { timeout 30 $B/x/ccq_ab time >> $OUT/ccq_ab.jsonl 2>&1; echo "ccq_ab time rc $?" >> $OUT/ccq_ab.jsonl; }
el bench-backward
[ $(left) -gt 20 ] && { timeout $(( $(left) - 5 > 60 ? 60 : $(left) - 5 )) $B/bench --backward > $OUT/bench_backward.jsonl 2>&1; echo "bench backward rc $?"; }
el bench-ccq
[ $(left) -gt 15 ] && { timeout $(( $(left) - 3 )) $B/bench --chunk-only --v128-only > $OUT/bench_ccq.jsonl 2>&1; echo "bench chunk rc $?"; }
el done
cut -c1-1200 $OUT/ab.jsonl; grep -v '^{"case' $OUT/ccq_ab.jsonl | cut -c1-400 | tail -12
python3 $F/show.py $OUT/bench_backward.jsonl bwd_ms; python3 $F/show.py $OUT/bench_ccq.jsonl ccq
