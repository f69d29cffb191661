#!/usr/bin/env bash
# lean11-onepass (prepared, NOT run): gdn2's phase 1 in one pass as kda's, b read from global memory inside the blocks.
# kda's and gla's per_key_prep kernels compile to PTX identical to lean11's (verified on the H200 in lean11's call),
# so only gdn2 needs the device. Self-contained (no instance objects): grad_ab for gdn2 compiled alone (~1 min).
#   bash .gpu/lean11-onepass/bench/cuda/results/h200-2026-12-03-lean11-scripts/onepass_call.sh  (carry .gpu/lean11-onepass .gpu/deps)
# Expected: "v1_vs_lib_worst":0 at every shape (the same arithmetic as main 07de2f4's phase 1, as kda's), 0 memcheck
# errors, 0 racecheck hazards, and prep_lib_ms well under lean11's 5.030 (prep_v1_ms ≈ 5.53 as the anchor).
set -u
cd "$(dirname "$0")"
R=$(cd ../../../.. && pwd); G=$(cd $R/.. && pwd)
export PATH=${CUDA_BIN:-/usr/local/cuda/bin}:$PATH
START=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - START )) s" | tee -a $OUT/steps.txt; }
FL="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$G/deps -I$G/deps/eigen3"
el build
timeout 150 nvcc $FL -split-compile=8 -DGRAD_AB_RULE=linea::gdn2 $R/bench/cuda/grad_ab.cu -o /tmp/ab_gdn2 > $OUT/build.log 2>&1 || echo "build failed rc $?"
grep -E "error|spill" $OUT/build.log | head
el checks
(timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/ab_gdn2 --check > /tmp/mc.log 2>&1; echo "memcheck grad_ab --check gdn2 rc $?" >> /tmp/mc.log) &
(timeout 60 compute-sanitizer --tool racecheck --kernel-regex kns=per_key_prep --error-exitcode 9 /tmp/ab_gdn2 --check > /tmp/rc.log 2>&1; echo "racecheck (per_key_prep) grad_ab --check gdn2 rc $?" >> /tmp/rc.log) &
wait
{ cat /tmp/mc.log; grep -E "SUMMARY|rc " /tmp/rc.log; } > $OUT/san.log; cat $OUT/san.log
el timing
timeout 30 /tmp/ab_gdn2 > $OUT/ab.jsonl 2>&1; cat $OUT/ab.jsonl
el done
