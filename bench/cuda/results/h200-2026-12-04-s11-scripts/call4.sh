#!/usr/bin/env bash
# Session 11, call 4 (carry .gpu/peers20 .gpu/bench): issue #14's 1×32768 cells — linea_cuda_bench --backward (the CI
# dry run's build of main 3cbfc6a; the kernels it times are HEAD's: this session changed the workspace layout only)
# and fla's Triton chunk_gla, chunk_kda, chunk_delta_rule forward + backward at 1×32768 (H = 16, K = V = 128, bf16).
set -u
PEERS_DIR=.gpu/peers20 LINEA_BENCH=$(pwd)/.gpu/bench/linea_cuda_bench PEERS_BUDGET=${PEERS_BUDGET:-470} \
  PEERS_STEPS="linea warm fla" PEERS_RULES="gla kda delta_rule" FLA_SHAPES="1x32768" LINEA_CAP=100 \
  WARM_CAP=${WARM_CAP:-230} OP_CAP=${OP_CAP:-100} bash bench/cuda/peers_call.sh
