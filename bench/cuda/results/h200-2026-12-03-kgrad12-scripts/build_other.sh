#!/usr/bin/env bash
set -u
R=/work/wt/kgrad12; B=/tmp/kgrad12/build; D=/work/main/.gpu/deps; mkdir -p $B
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
cd $R
one() { local t=$(date +%s); nice nvcc $FL "$@" || echo "FAILED: $*"; echo "$(( $(date +%s) - t )) s: ${@: -1}"; }
for u in "$@"; do one -c tests/backend/cuda/instances/$u.cu -o $B/$u.inst.o; done
echo DONE
