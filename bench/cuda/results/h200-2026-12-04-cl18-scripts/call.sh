# cl18's checks on the H200 (not run by cl18: no device time). In the repository root, carry .gpu/deps:
#   LIMIT=420 bash bench/cuda/results/h200-2026-12-04-cl18-scripts/call.sh
# The suite (every case: plan_test.cu's host cases, the odd-token regression case in linea's and a caller's
# workspace, every own_stream case's misaligned-workspace check), memcheck of the odd-token case, fuzz seed 20261220
# (its case 40) and seed 20261207's case 1303.
set -u
LIMIT=${LIMIT:-420} FULL=1 FUZZ_SEED=20261220 FUZZ_CASES="1303" \
  MEMCHECK="CUDA backward: 16-bit state passes with an odd number of tokens*" \
  RACECHECK="state16_ring|CUDA backward: 16-bit state passes with an odd number of tokens*" \
  bash bench/cuda/device_call.sh
