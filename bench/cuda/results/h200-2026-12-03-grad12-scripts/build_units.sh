#!/bin/bash
# usage: build_units.sh unit... ; builds instance units (or main/backward_test) from /work/wt/grad12 one at a time
R=/work/wt/grad12; B=/tmp/grad12/build; D=/work/main/.gpu/deps
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -I$D -I$D/eigen3"
cd $R
for u in "$@"; do
  t=$(date +%s)
  case $u in
    main|backward_test) nice nvcc $FL -DLINEA_CUDA_EXTERN_INSTANCES -c tests/backend/cuda/$u.cu -o $B/$u.o || echo "FAILED $u";;
    *) nice nvcc $FL -c tests/backend/cuda/instances/$u.cu -o $B/$u.inst.o || echo "FAILED $u";;
  esac
  echo "$(( $(date +%s) - t )) s: $u $(date -u +%T)"
done
