#!/usr/bin/env bash
# bwd6 call 1: ncu of the baseline (CI build of 248b1d0) backward phases 1-3 at 8x4096.
set -u
cd "$(dirname "$0")"
export PATH=/usr/local/cuda/bin:$PATH
S=$(date +%s); el() { echo "== $1 at $(( $(date +%s) - S )) s"; }
mkdir -p bb && tar -xJf base_bins.tar.xz -C bb linea_cuda_bench
el ncu-gd
LINEA_BENCH_BACKWARD=gated_delta_rule:8 timeout 100 ncu --set full --import-source yes -k regex:"chunk_prep|forward_states|reverse_states" -c 3 -o $OUT/gd bb/linea_cuda_bench --backward > $OUT/ncu_gd.log 2>&1; echo "rc $?"
el ncu-kda
LINEA_BENCH_BACKWARD=kda:8 timeout 60 ncu --set full --import-source yes -k regex:"per_key_prep" -c 1 -o $OUT/kda bb/linea_cuda_bench --backward > $OUT/ncu_kda.log 2>&1; echo "rc $?"
el print
for f in gd kda; do
  ncu -i $OUT/$f.ncu-rep --page details --csv > $OUT/${f}_details.csv 2>&1
  ncu -i $OUT/$f.ncu-rep --page source --csv --print-source sass > $OUT/${f}_source.csv 2>&1
done
ls -la $OUT; python3 top_stalls.py $OUT/gd_source.csv $OUT/kda_source.csv > $OUT/top_stalls.txt 2>&1; head -c 6000 $OUT/top_stalls.txt
grep -E '"(Duration|Registers Per Thread|Achieved Occupancy|Dynamic Shared Memory Per Block|Compute \(SM\) Throughput|Memory Throughput)"' $OUT/gd_details.csv $OUT/kda_details.csv | cut -c1-300
el done
