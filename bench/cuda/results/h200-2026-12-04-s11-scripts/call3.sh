#!/usr/bin/env bash
# Session 11, call 3, right after call 2 on the warm machine (carry .gpu/peers20: fla-core 0.6.0 + einops only):
# linea_cuda_bench --backward (call 2's build, /tmp/b/bench) and fla's Triton chunk_gla / chunk_kda forward +
# backward at 8×4096 (FLA_FLASH_QLA=0 FLA_FLASH_KDA=0 FLA_TILELANG=0, peers_train_bench.py), with the budget that
# fla's autotuning needs (issue #14's table had no fla row for gla or kda: the fin19 call's cap cut gla's autotune).
set -u
PEERS_DIR=.gpu/peers20 LINEA_BENCH=/tmp/b/bench PEERS_BUDGET=${PEERS_BUDGET:-480} PEERS_STEPS="linea warm fla" \
  PEERS_RULES="gla kda" FLA_SHAPES="8x4096" LINEA_CAP=100 WARM_CAP=${WARM_CAP:-240} OP_CAP=${OP_CAP:-110} \
  bash bench/cuda/peers_call.sh
