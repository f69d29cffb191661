#!/usr/bin/env bash
# NOT RUN as written: with .gpu/peers11 the carry passes the 64 MiB limit beside .gpu/conformance, and a refusal left
# too little device time; the final call ran device_call.sh alone (bench/cuda/README.md, "fin14b").
# The session's last device call (lead, 2026-12-03 fifth session): the final merged tree (with ci14's shared phase
# launchers) through bench/cuda/device_call.sh — suite, conformance, sanitizers, a fresh fuzz seed, bench --backward —
# then the peers that run on this image (fla's Triton delta_rule and linear_attn, FlashQLA's Gated DeltaNet) beside
# linea's --backward at 8×4096, in the same call (bench/cuda/peers_call.sh, a reduced budget).
#   bash bench/cuda/results/h200-2026-12-03-fin14b-scripts/call.sh   (carry .gpu/deps .gpu/conformance .gpu/peers11)
set -u
LIMIT=${LIMIT:-300} FULL=1 FUZZ_CASES="2431 212 2518" FUZZ_SEED=${FUZZ_SEED:-20261215} \
  MEMCHECK="*16-bit state passes over 128 chunks*;*caller workspace*" bash bench/cuda/device_call.sh
OUT_MAIN=$OUT
( export OUT=/tmp/peers_out LINEA_BENCH=/tmp/b/bench PEERS_DIR=.gpu/peers11 PEERS_STEPS="linea warm flashqla fla" \
    PEERS_RULES="delta_rule linear_attn" FLA_SHAPES="8x4096" FQ_SHAPES="8x4096" PEERS_BUDGET=${PEERS_BUDGET:-210} WARM_CAP=${WARM_CAP:-80}
  timeout $(( ${PEERS_BUDGET:-210} + 30 )) bash bench/cuda/peers_call.sh > /tmp/peers_call.log 2>&1
  cp /tmp/peers_call.log /tmp/peers_out/ 2>/dev/null
  tar -czf "$OUT_MAIN/peers.tar.gz" -C /tmp peers_out )
tail -n 20 /tmp/peers_out/run.log 2>/dev/null; cat /tmp/peers_out/table.md 2>/dev/null
