#!/usr/bin/env bash
# compile-time reference: main 861c7ef's per-key instance units, same flags, same machine
R=/tmp/kgrad12/main_src; B=/tmp/kgrad12/main_build; D=/work/main/.gpu/deps; mkdir -p $B
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
cd $R
for u in kda gdn2 gla; do t=$(date +%s); nice nvcc $FL -c tests/backend/cuda/instances/$u.cu -o $B/$u.inst.o 2>/dev/null; echo "$(( $(date +%s) - t )) s: main $u.inst.o (load $(cut -d' ' -f1 /proc/loadavg))"; done
echo DONE
