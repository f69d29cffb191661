#!/bin/bash
# usage: ab.sh rule [extra flags...]  -> /tmp/pk13/ab_<rule><suffix>
cd /work/wt/pk13; D=/work/main/.gpu/deps; r=$1; shift; suf=${SUF:-}
t=$(date +%s)
nice nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -Xptxas -v -Iinclude -Itests -Itools -I$D -I$D/eigen3 -DGRAD_AB_RULE=linea::$r "$@" bench/cuda/grad_ab.cu -o /tmp/pk13/ab_$r$suf > /tmp/pk13/ab_$r$suf.ptxas 2>&1 || echo "FAILED $r$suf"
echo "$(( $(date +%s) - t )) s ab_$r$suf"
grep -A3 "Compiling entry function.*per_key_grad" /tmp/pk13/ab_$r$suf.ptxas | grep -E "Compiling|Used|spill" | sed 's/.*_ZN5linea11cuda_detail3bwd//' | cut -c1-60
