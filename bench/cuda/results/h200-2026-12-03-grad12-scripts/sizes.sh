#!/bin/bash
# usage: sizes.sh <include dir> <tag>
I=$1; T=$2
t=$(date +%s)
nice nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -v -lineinfo -I$I -cubin /tmp/grad12/size.cu -o /tmp/grad12/$T.cubin > /tmp/grad12/$T.ptxas 2>&1 || { echo FAILED; tail -30 /tmp/grad12/$T.ptxas; exit 1; }
echo "compile $(( $(date +%s) - t )) s"
/tmp/grad12/textsz.sh /tmp/grad12/$T.cubin
grep -E "Used|spill" /tmp/grad12/$T.ptxas | grep -B1 -A0 "Used" | head -20
