#!/usr/bin/env bash
# prof11 call 1: ncu of phase 4 (the library's chunk_grad for gated_delta, per_key_grad for kda), bf16 8x4096 H=16
# K=V=128. Binaries built on the CPU machine (grad_ab.cu, -lineinfo, -DGRAD_AB_RULE=linea::{gated_delta,kda}, no
# extern instances), carried in .gpu/prof11/bin. grad_ab --once launches the library's phase 4 first: -c 1 takes it.
#   bash .gpu/prof11/call1.sh      (carry .gpu/prof11)
set -u
export PATH=/usr/local/cuda/bin:$PATH
G=$PWD/.gpu/prof11; B=/tmp/p; mkdir -p $B; cp $G/bin/ab_* $B/; chmod +x $B/ab_*
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/info.txt 2>&1
ncu --version >> $OUT/info.txt 2>&1
prof() {  # name binary kernel-regex
  timeout 200 ncu --clock-control none -k regex:$3 -c 1 --set full --import-source yes -f -o $B/$1 $B/$2 --once > $B/$1.run.txt 2>&1
  echo "ncu $1 rc $?" >> $OUT/info.txt
  ncu -i $B/$1.ncu-rep --page details --print-details all > $B/$1_details.txt 2>&1
  ncu -i $B/$1.ncu-rep --page source --csv --print-source cuda > $B/$1_src_cuda.csv 2>&1 || echo "src cuda failed" >> $OUT/info.txt
  ncu -i $B/$1.ncu-rep --page source --csv --print-source sass > $B/$1_src_sass.csv 2>&1 || echo "src sass failed" >> $OUT/info.txt
  ncu -i $B/$1.ncu-rep --page raw --csv > $B/$1_raw.csv 2>&1
}
prof gd ab_gd chunk_grad_kernel
prof kda ab_kda per_key_grad_kernel
cuobjdump -sass $B/ab_gd > $B/gd.sass 2>&1; cuobjdump -sass $B/ab_kda > $B/kda.sass 2>&1
cd $B && tar cJf $OUT/prof.tar.xz *.txt *.csv *.sass && cp gd_details.txt kda_details.txt $OUT/ 2>/dev/null
ls -la $B >> $OUT/info.txt
cat $OUT/info.txt
for f in gd kda; do echo "== $f"; grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Issued Ipc|No Eligible|One or More|Warp Cycles Per Issued|Active Warps Per|Eligible Warps|SM Busy|Memory Throughput|L1/TEX Hit|L2 Hit|Executed Ipc" $B/${f}_details.txt | head -30; done
