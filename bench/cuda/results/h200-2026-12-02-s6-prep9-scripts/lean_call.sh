#!/usr/bin/env bash
# A ready device check of branch prep9-lean (41ef02b), NOT run by prep9 (its device time was spent): grad_ab for kda,
# gdn2, gla built on the CPU machine from that commit, self-contained (no instance objects):
#   nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude \
#        -I/usr/include/eigen3 -DGRAD_AB_RULE=linea::<rule> -DGRAD_AB_PREP_V0 bench/cuda/grad_ab.cu -o ab_<rule>
# (~30-70 s each there), carried as .gpu/prep9-lean/ab_{kda,gdn2,gla} with this script. ~40 s of device time:
#   run: bash .gpu/prep9-lean/lean_call.sh   carry: [".gpu/prep9-lean"]
# Reads: every JSON line's "worst" (new phase 1 vs main's: float32 workspace ≤ ~1e-6, bf16 outputs ≤ ~1e-4, as
# prep9's call), kda's "lean_vs_lib" (0 expected), "prep_lean_ms" against "prep_ms" (5.55 in prep9's call) and
# "bwd_lean_ms" against "bwd_ms"; the sanitizer summaries (0 errors, 0 hazards).
set -u
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
for r in kda gdn2 gla; do timeout 30 ./ab_$r > $OUT/ab_$r.jsonl 2>&1; echo "ab $r rc $?"; cat $OUT/ab_$r.jsonl; done
for r in kda gdn2 gla; do
  (timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 ./ab_$r --check > /tmp/mc_$r.log 2>&1; echo "memcheck $r rc $?" >> /tmp/mc_$r.log) &
  (timeout 40 compute-sanitizer --tool racecheck --error-exitcode 9 ./ab_$r --check > /tmp/rc_$r.log 2>&1; echo "racecheck $r rc $?" >> /tmp/rc_$r.log) &
done
wait
for r in kda gdn2 gla; do cat /tmp/mc_$r.log; grep -E "SUMMARY|rc " /tmp/rc_$r.log; done | tee $OUT/san.log
