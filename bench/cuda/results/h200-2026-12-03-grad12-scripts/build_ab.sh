#!/bin/bash
R=/work/wt/grad12; B=/tmp/grad12/build
FL="-std=c++20 -O3 -DNDEBUG -lineinfo -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I/work/main/.gpu/deps -I/work/main/.gpu/deps/eigen3"
cd $R
t=$(date +%s); nice nvcc $FL bench/cuda/grad_ab.cu -o $B/ab_all || echo FAILED ab_all; echo "$(( $(date +%s) - t )) s: ab_all $(date -u +%T)"
t=$(date +%s); nice nvcc $FL -DGRAD_AB_FLOAT -DGRAD_AB_RULE=linea::gated_delta bench/cuda/grad_ab.cu -o $B/ab_gd_f32 || echo FAILED ab_gd_f32; echo "$(( $(date +%s) - t )) s: ab_gd_f32 $(date -u +%T)"
/tmp/grad12/build_units.sh gated_delta delta simple_gla additive kda gla gdn2 backward_test main
