#!/usr/bin/env bash
# grad13b: one device call (run tool, carry [".gpu/grad13b", ".gpu/deps"]): builds grad_ab (gated_delta, delta) and the
# CUDA backward suite (main.cu + backward_test.cu + the 7 instance units) side by side on 16 cores; as soon as the
# grad_ab binaries exist: --check, memcheck (both rules) and racecheck (the new kernels), then the timed 8×4096 runs
# (while the suite still compiles on the CPU: old and new interleaved in one process either way), then the suite.
set -u
R=.gpu/grad13b; D=$PWD/.gpu/deps; O=/tmp/g13b; mkdir -p $O
L=$OUT/log.txt; S=$(date +%s)
t() { echo "[$(( $(date +%s) - S ))s] $*" >> $L; }
F="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
nvidia-smi --query-gpu=name,driver_version --format=csv >> $L 2>&1
bld() { local s=$(date +%s); nvcc $F "$@" >> $OUT/build.log 2>&1; local rc=$?; t "built ${@: -1} rc=$rc $(( $(date +%s) - s ))s"; }
if [ -f $R/bin/ab_gd ] && [ -f $R/bin/ab_de ]; then cp $R/bin/ab_gd $R/bin/ab_de $O/ && chmod +x $O/ab_*; t "grad_ab: built here (nvcc, same flags)"
else
( bld -DGRAD_AB_RULE=linea::gated_delta $R/bench/cuda/grad_ab.cu -o $O/ab_gd ) &
( bld -DGRAD_AB_RULE=linea::delta $R/bench/cuda/grad_ab.cu -o $O/ab_de ) &
fi
# NO_SUITE=1: grad_ab only (check, sanitizers, timing: ~20 s of command with the binaries carried in bin/)
[ -z "${NO_SUITE:-}" ] && for r in gated_delta delta simple_gla additive kda gla gdn2; do ( bld -c $R/tests/backend/cuda/instances/$r.cu -o $O/$r.inst.o ) & done
if [ -z "${NO_SUITE:-}" ]; then
( bld -DLINEA_CUDA_EXTERN_INSTANCES -c $R/tests/backend/cuda/main.cu -o $O/main.o ) &
( bld -DLINEA_CUDA_EXTERN_INSTANCES -c $R/tests/backend/cuda/backward_test.cu -o $O/backward_test.o ) &
fi
while [ ! -x $O/ab_gd ] || [ ! -x $O/ab_de ]; do sleep 2; [ $(( $(date +%s) - S )) -gt 170 ] && { t "grad_ab not built"; exit 1; }; done
sleep 1
for x in gd de; do echo "## $x" >> $OUT/check.txt; timeout 40 $O/ab_$x --check >> $OUT/check.txt 2>&1; t "check $x rc=$?"; done
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
( timeout 90 $CS --tool memcheck $O/ab_gd --check > $OUT/san_gd.txt 2>&1; t "memcheck gd rc=$?" ) & p1=$!
( timeout 90 $CS --tool memcheck $O/ab_de --check > $OUT/san_de.txt 2>&1; t "memcheck de rc=$?" ) & p2=$!
( timeout 90 $CS --tool racecheck --kernel-regex "kns=ut_adjoint|ut_m_kernel" $O/ab_gd --check > $OUT/race.txt 2>&1; t "racecheck ut_ gd rc=$?" ) & p3=$!
wait $p1 $p2 $p3
for f in san_gd san_de race; do tail -2 $OUT/$f.txt | sed "s/^/$f: /" >> $L; done
for x in gd de; do echo "## $x" >> $OUT/time.txt; timeout 40 $O/ab_$x >> $OUT/time.txt 2>&1; t "time $x rc=$?"; done
grep -h '"grad_new_ms"' $OUT/time.txt | grep -o '"rule":"[a-z_]*"\|"grad_[a-z_]*":[0-9.]*\|"bwd_[a-z_]*":[0-9.]*\|"inter_ms":[0-9.]*\|"ut_ms":[0-9.]*' | tr '\n' ' ' >> $L; echo >> $L
[ -n "${NO_SUITE:-}" ] && { cat $L; exit 0; }
wait
nvcc -gencode=arch=compute_90a,code=sm_90a $O/main.o $O/backward_test.o $O/*.inst.o -o $O/tests >> $OUT/build.log 2>&1; t "link rc=$?"
export LINEA_BACKWARD_ERRORS=1
X=$O/tests
P1='*inter-chunk kernel*'; P2='*(bf16? fp16)*'; P3='*(bf16? the other rules)*,*bf16 over 32 chunks*'
P4='*CCQ read: bf16*,*normalize (additive)*,*in-kernel options (L2 norm*,*one CTA per (sequence*'; P5='*float32*'
i=0; for p in "$P1" "$P2" "$P3" "$P4" "$P5"; do i=$((i+1)); ( timeout 60 $X -tc="$p" > $O/t$i.txt 2>&1; t "tests $i rc=$? ($p)" ) & done
( timeout 60 $X -tce="$P1,$P2,$P3,$P4,$P5" > $O/t6.txt 2>&1; t "tests 6 (the rest) rc=$?" ) &
wait
for i in 1 2 3 4 5 6; do echo "==== t$i" >> $OUT/tests.log; cat $O/t$i.txt >> $OUT/tests.log; done
grep -h "test cases:\|assertions:" $OUT/tests.log >> $L
cat $L
