#!/usr/bin/env bash
# bwd7's second device call: call 1 timed grad_ab's two builds (block_gemm_direct's k loop unrolled by two, u2,
# and rolled, u1) one after the other while 11 nvcc jobs ran on the host. Here: the whole backward only
# (GRAD_AB_WHOLE_ONLY), the two builds alternated twice on an otherwise idle machine; then memcheck on grad_ab --check.
set -u
R=$(cd "$(dirname "$0")/../../../.." && pwd)   # .gpu/bwd7
cd $R
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s"; }
for u in 2 1; do xz -dc grad_ab_u$u.xz > /tmp/grad_ab_u$u && chmod +x /tmp/grad_ab_u$u; done
for round in 1 2; do
  for u in 2 1; do
    el "round $round u$u"
    GRAD_AB_WHOLE_ONLY=1 timeout 35 /tmp/grad_ab_u$u > /tmp/r.jsonl 2>&1; echo "rc $?"
    sed -E 's/^\{"rule":"([a-z_0-9]+)","B":([0-9]+),"T":([0-9]+).*"bwd_ms":([0-9.]+).*/'"u$u r$round"' \1 \2x\3 \4/' /tmp/r.jsonl | tee -a $OUT/whole.txt
  done
done
el memcheck-ab
# grad_ab --check runs the library's phase-4 kernels and the other Wide choice (128-wide products) at odd shapes
timeout 45 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/grad_ab_u2 --check > $OUT/memcheck_ab.log 2>&1; echo "memcheck grad_ab --check rc $?"
grep -E "ERROR SUMMARY" $OUT/memcheck_ab.log; grep -c '"same":true' $OUT/memcheck_ab.log
el done
