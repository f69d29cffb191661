#!/usr/bin/env bash
# pk18 call 2: the staged gates (this branch) against main 5386113's kernel (perkey_delta_ab_v0.hpp) in one process:
# `perkey_delta_ab --check` (small shapes against float64, in-kernel gates, gates cp.async cannot read), `--short`
# (8×4096 timing, ordinary and extreme gates; the library path), ncu of the new kernel (prof.cu, as call 1), then
# compute-sanitizer memcheck and racecheck on `--check`. Binaries built on the CPU machine (-lineinfo), carried xz'd:
#   bash .gpu/pk18/bench/cuda/results/h200-2026-12-04-pk18-scripts/call2.sh      (carry .gpu/pk18)
set -u
export PATH=/usr/local/cuda/bin:$PATH
G=$PWD/.gpu/pk18; W=/tmp/pk18; mkdir -p $W
for b in ab prof; do xz -dc $G/bins/$b.xz > $W/$b; chmod +x $W/$b; done
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s" >> $OUT/checks.txt; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $OUT/checks.txt
el check; timeout 60 $W/ab --check > $OUT/check.jsonl 2>&1; echo "check rc $?" >> $OUT/checks.txt
el timing; timeout 100 $W/ab --short > $OUT/ab.jsonl 2>&1; echo "ab rc $?" >> $OUT/checks.txt
el prof; $W/prof --time > $OUT/prof_time.jsonl 2>&1
timeout 60 ncu --clock-control none -k regex:perkey_delta_kernel -c 3 --set full --import-source yes -f -o $W/pk $W/prof > $W/run.txt 2>&1
echo "ncu rc $?" >> $OUT/checks.txt
ncu -i $W/pk.ncu-rep --page details --print-details all > $W/details.txt 2>&1
for i in 0 1 2; do ncu -i $W/pk.ncu-rep --launch-skip $i --launch-count 1 --page source --csv --print-source sass > $W/src_sass_$i.csv 2>&1; done
(cd $W && tar cJf $OUT/prof.tar.xz details.txt src_sass_*.csv run.txt)
el sanitizers
( timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $W/ab --check > $W/mc.log 2>&1; echo "memcheck --check rc $?" >> $W/mc.log ) &
( timeout 100 compute-sanitizer --tool racecheck --kernel-regex kns=perkey_delta_kernel --error-exitcode 9 $W/ab --check > $W/rc.log 2>&1; echo "racecheck --check rc $?" >> $W/rc.log ) &
wait
grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|rc " $W/mc.log $W/rc.log >> $OUT/checks.txt
grep -h -E "Error|Hazard|hazard" $W/mc.log $W/rc.log | head -20 >> $OUT/checks.txt
el done
cat $OUT/checks.txt; cut -c1-400 $OUT/check.jsonl; cat $OUT/ab.jsonl $OUT/prof_time.jsonl
grep -E "perkey_delta_kernel|Duration|Issued Ipc Active|No Eligible|Warp Cycles Per Issued" $W/details.txt | head -20
