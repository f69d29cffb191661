#!/usr/bin/env bash
# grad13 call 2 (run tool, carry [".gpu/grad13"]): the CUDA backward suite (main.cu + backward_test.cu, built here)
# in six processes side by side, memcheck of the new test case, then grad_ab for simple_gla and linear_attn (check,
# timing) and gated_delta / delta timing again, alone on the GPU.
set -u
B=.gpu/grad13/bin; xz -dk $B/linea_cuda_backward_tests.xz; chmod +x $B/* 2>/dev/null
L=$OUT/log.txt; S=$(date +%s)
t() { echo "[$(( $(date +%s) - S ))s] $*" >> $L; }
export LINEA_BACKWARD_ERRORS=1
X=$B/linea_cuda_backward_tests
P1='*inter-chunk kernel*'; P2='*(bf16? fp16)*'; P3='*(bf16? the other rules)*,*bf16 over 32 chunks*'
P4='*CCQ read: bf16*,*normalize (additive)*,*in-kernel options (L2 norm*,*one CTA per (sequence*'; P5='*float32*'
i=0; for p in "$P1" "$P2" "$P3" "$P4" "$P5"; do i=$((i+1)); ( timeout 60 $X -tc="$p" > $OUT/t$i.txt 2>&1; t "tests $i rc=$? ($p)" ) & done
( timeout 60 $X -tce="$P1,$P2,$P3,$P4,$P5" > $OUT/t6.txt 2>&1; t "tests 6 (the rest) rc=$?" ) &
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
( LINEA_BACKWARD_ERRORS= timeout 60 $CS --tool memcheck $X -tc="$P1" > $OUT/t7.txt 2>&1; t "memcheck new case rc=$?" ) &
wait
for i in 1 2 3 4 5 6 7; do echo "==== t$i" >> $OUT/tests.log; cat $OUT/t$i.txt >> $OUT/tests.log; rm -f $OUT/t$i.txt; done
grep -h "test cases:\|assertions:\|ERROR SUMMARY" $OUT/tests.log >> $L
for x in sg3 la3; do echo "## $x check" >> $OUT/ab.jsonl; timeout 15 $B/grad_ab_$x --check >> $OUT/ab.jsonl 2>&1; t "check $x rc=$?"; done
for x in sg3 la3 gd3 de3; do echo "## $x" >> $OUT/ab.jsonl; timeout 20 $B/grad_ab_$x >> $OUT/ab.jsonl 2>&1; t "time $x rc=$?"; done
cat $L
