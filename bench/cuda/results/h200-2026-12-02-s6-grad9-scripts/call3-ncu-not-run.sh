#!/usr/bin/env bash
# Prepared, NOT run (grad9 had no device time left): the warp-state profile of phase 4 that call2.sh meant to take
# (its GRAD_AB_ONLY=gated_delta matched no rule: grad_ab names it gated_delta_rule). Carry .gpu/grad9bin (the
# binaries of call2.sh, or rebuild ab_gated_delta with build_here.sh) and run from the repository root:
#   bash .gpu/grad9bin/call3-ncu-not-run.sh
# Profiles the two chunk_grad launches of the whole-backward runs in grad_ab --once: main's kernel (v0) first, then
# the library's, for gated_delta at 8x4096.
set -u
cd .gpu/grad9bin
export PATH=/usr/local/cuda/bin:$PATH
B=/tmp/b; mkdir -p $B; xz -dc ab_gated_delta.xz > $B/ab_gated_delta; chmod +x $B/ab_gated_delta
timeout 120 ncu -k regex:chunk_grad -c 2 --section SpeedOfLight --section Occupancy --section WarpStateStats \
  --section SchedulerStats --section LaunchStats --section MemoryWorkloadAnalysis $B/ab_gated_delta --once > $OUT/ncu_gd.txt 2>&1
grep -E "chunk_grad|Duration|Achieved Occupancy|Registers Per|Theoretical Occ|Warp Cycles Per Issued|Issued Warp|No Eligible|Stall|Memory Throughput|Compute \(SM\)" $OUT/ncu_gd.txt | head -60
