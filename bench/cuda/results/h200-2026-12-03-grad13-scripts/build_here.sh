#!/usr/bin/env bash
# grad13: builds here one nvcc at a time; $1 = list of targets
set -u
cd /work/wt/grad13
D=/work/main/.gpu/deps
O=/tmp/grad13/obj; mkdir -p $O
F="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -Iinclude -Itests -Itools -I$D -I$D/eigen3"
for t in "$@"; do
  s=$(date +%s)
  case $t in
    ab_gd3) nice nvcc $F -DGRAD_AB_RULE=linea::gated_delta bench/cuda/grad_ab.cu -o $O/grad_ab_gd3 ;;
    ab_de3) nice nvcc $F -DGRAD_AB_RULE=linea::delta bench/cuda/grad_ab.cu -o $O/grad_ab_de3 ;;
    ab_gd1) nice nvcc $F -DLINEA_BWD_INTER_TERMS=1 -DGRAD_AB_RULE=linea::gated_delta bench/cuda/grad_ab.cu -o $O/grad_ab_gd1 ;;
    ab_sg3) nice nvcc $F -DGRAD_AB_RULE=linea::simple_gla bench/cuda/grad_ab.cu -o $O/grad_ab_sg3 ;;
    ab_la3) nice nvcc $F -DGRAD_AB_RULE=linea::additive bench/cuda/grad_ab.cu -o $O/grad_ab_la3 ;;
    ab_de1) nice nvcc $F -DLINEA_BWD_INTER_TERMS=1 -DGRAD_AB_RULE=linea::delta bench/cuda/grad_ab.cu -o $O/grad_ab_de1 ;;
    inst_*) r=${t#inst_}; nice nvcc $F -c tests/backend/cuda/instances/$r.cu -o $O/$r.inst.o ;;
    main) nice nvcc $F -DLINEA_CUDA_EXTERN_INSTANCES -c tests/backend/cuda/main.cu -o $O/main.o ;;
    bt) nice nvcc $F -DLINEA_CUDA_EXTERN_INSTANCES -c tests/backend/cuda/backward_test.cu -o $O/backward_test.o ;;
    link) nvcc -gencode=arch=compute_90a,code=sm_90a $O/main.o $O/backward_test.o $O/*.inst.o -o $O/linea_cuda_backward_tests ;;
  esac
  echo "$t rc=$? $(( $(date +%s) - s ))s"
done
