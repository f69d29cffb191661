#!/usr/bin/env bash
# bwd8's second device call (#14): where phases 1-4 of gated_delta's bf16 backward (1xTF32) wait. grad_ab
# (-DGRAD_AB_RULE=linea::gated_delta, -lineinfo, no extern instances) built on the CPU machine, carried as ab_gd.xz;
# `grad_ab --once` runs the library's backward first: ncu's first 4 matching kernels are its prep, forward states,
# reverse states and chunk_grad (8x4096).
# Run from the repository root: bash .gpu/bwd8/bench/cuda/results/h200-2026-12-02-s5-bwd8-scripts/call2.sh
set -u
cd "$(dirname "$0")/../../../.."   # .gpu/bwd8
export PATH=/usr/local/cuda/bin:$PATH
xz -dc ab_gd.xz > /tmp/ab_gd && chmod +x /tmp/ab_gd
S=$(date +%s)
timeout 100 ncu -k regex:"prep|states|grad" -c 4 --section SpeedOfLight --section Occupancy --section LaunchStats \
  --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis -o /tmp/rep /tmp/ab_gd --once > $OUT/ncu_run.log 2>&1
echo "ncu rc $? after $(( $(date +%s) - S )) s"; tail -n 3 $OUT/ncu_run.log
ncu -i /tmp/rep.ncu-rep --page details > $OUT/ncu_details.txt 2>&1
grep -E "^  [a-z_]+.*\(|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles Per Issued|Issue Slots Busy|Eligible Warps|No Eligible|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|L1/TEX Hit|L2 Hit|Dynamic Shared" $OUT/ncu_details.txt | sed -E "s/\(linea::cuda_detail::bwd::work.*//" | cut -c1-150
echo "-- stall rules:"; grep -E "stalled|Stall" $OUT/ncu_details.txt | cut -c1-400 | head -24
ncu -i /tmp/rep.ncu-rep --page raw --csv --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio" > $OUT/ncu_stalls.csv 2>&1 || true
python3 - "$OUT/ncu_stalls.csv" <<'PY' || true
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = [i for i, r in enumerate(rows) if r and r[0] == "ID"]
if hdr:
    h = rows[hdr[0]]; data = [r for r in rows[hdr[0] + 2:] if len(r) == len(h)]
    cols = [i for i, n in enumerate(h) if "issue_stalled" in n]
    name = h.index("Kernel Name") if "Kernel Name" in h else 4
    for r in data:
        vals = sorted(((float(r[i].replace(",", "")) if r[i] else 0.0, h[i].split("issue_stalled_")[1].split("_per")[0]) for i in cols), reverse=True)[:6]
        print(r[name][:60], " ".join(f"{n}={v:.2f}" for v, n in vals))
PY
