set -u
B=/tmp/lead17; mkdir -p $B
export PATH=/usr/local/cuda/bin:$PATH
D=.gpu/lead17
nvcc -gencode=arch=compute_90a,code=sm_90a $D/t17.o $D/main.o $D/backward_phases.inst.o $D/delta.inst.o $D/gated_delta.inst.o -o $B/t17 > $OUT/link.txt 2>&1; echo "link rc $?" >> $OUT/link.txt
timeout 40 $B/t17 > $B/t.log 2>&1; echo "suite rc $?" >> $B/t.log
grep -E "ERROR|FAILED|test cases|assertions|rc |error" $B/t.log | head -40 > $OUT/tests.txt
timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 $B/t17 "-tc=CUDA backward: 16-bit state passes with an odd number of tokens*" > $B/m.log 2>&1; echo "memcheck rc $?" >> $B/m.log
tail -5 $B/m.log > $OUT/memcheck.txt
cat $OUT/tests.txt $OUT/memcheck.txt
