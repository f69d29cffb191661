#!/usr/bin/env bash
# pk18 call 1: ncu (full set, source counters) of main's perkey_delta_kernel for kda, gdn2, gla (bf16 8×4096, H = 16,
# K = V = 128; one launch each), and the three timed with CUDA events. Binary built on the CPU machine (prof.cu,
# -lineinfo), carried xz'd in .gpu/pk18/bins.     bash .gpu/pk18/bench/cuda/results/h200-2026-12-04-pk18-scripts/call1.sh
set -u
export PATH=/usr/local/cuda/bin:$PATH
G=$PWD/.gpu/pk18; W=/tmp/pk18; mkdir -p $W; xz -dc $G/bins/prof.xz > $W/prof; chmod +x $W/prof
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/info.txt 2>&1
$W/prof --time > $OUT/time.jsonl 2>&1; echo "time rc $?" >> $OUT/info.txt
timeout 150 ncu --clock-control none -k regex:perkey_delta_kernel -c 3 --set full --import-source yes -f -o $W/pk $W/prof > $W/run.txt 2>&1
echo "ncu rc $?" >> $OUT/info.txt; tail -5 $W/run.txt >> $OUT/info.txt
ncu -i $W/pk.ncu-rep --page details --print-details all > $W/details.txt 2>&1
for i in 0 1 2; do
  ncu -i $W/pk.ncu-rep --print-kernel-base function --launch-skip $i --launch-count 1 --page source --csv --print-source sass > $W/src_sass_$i.csv 2>&1 || echo "src $i failed" >> $OUT/info.txt
done
ncu -i $W/pk.ncu-rep --page raw --csv > $W/raw.csv 2>&1
cd $W && tar cJf $OUT/prof.tar.xz details.txt src_sass_*.csv raw.csv run.txt && cp details.txt $OUT/
ls -la $W >> $OUT/info.txt; cat $OUT/info.txt $OUT/time.jsonl
grep -E "perkey_delta_kernel|Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|Issued Ipc|No Eligible|Warp Cycles Per Issued|Eligible Warps|Executed Ipc|Shared.*Busy|MIO" $W/details.txt | head -60
