#!/bin/bash
# compile time of the gated_delta and delta instance units, main 861c7ef's headers vs grad12's, back to back
D=/work/main/.gpu/deps
for u in gated_delta; do for R in /work/main /work/wt/grad12; do
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
t=$(date +%s); nice nvcc $FL -c $R/tests/backend/cuda/instances/$u.cu -o /tmp/grad12/ct.o; echo "$(( $(date +%s) - t )) s: $u $R $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
done; done
