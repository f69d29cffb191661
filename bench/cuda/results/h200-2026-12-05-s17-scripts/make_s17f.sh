#!/usr/bin/env bash
# Session 17: the carry directory .gpu/s17f for one device call that checks everything prepared and not yet run —
# main + flip15.patch (session 13's three switches on) + gamma17.patch (the CUDA backward sums g_gamma's stride-0 dg) —
# and times the switches. Then, on the device (carry [".gpu/s17f"], timeout_s ≥ LIMIT + 60):
#   S=.gpu/s17f LIMIT=400 bash bench/cuda/results/h200-2026-12-05-s15-scripts/call3.sh
# (the suite includes "CUDA backward: g_gamma's dg, summed over the positions of each element"; the conformance runner
# gets options/, whose three g_gamma cases then have cuda/backward lines). bench_base, bench_all, s13_ab and the
# vectors stay session 15's / 16's (.gpu/s16f: the A/B of the switches themselves).
# ~12 min on 2 cores when /tmp/s17's build is warm, ~35 cold. Run from /work/main.
set -euo pipefail
main=$(pwd); W=/tmp/s17
rm -rf $W && git clone -q "$main" $W/linea && cd $W/linea
git am -q bench/cuda/results/h200-2026-12-05-s15-scripts/flip15.patch
git am -q bench/cuda/results/h200-2026-12-05-s17-scripts/gamma17.patch
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLINEA_BUILD_TESTS=ON -DLINEA_BUILD_TOOLS=ON \
      -DLINEA_CUDA_GENCODE="-gencode=arch=compute_90a,code=sm_90a" > /dev/null
make -C build -j2 linea_cuda_tests linea_cuda_conformance
mkdir -p "$main/.gpu/s17f"
for f in linea_cuda_tests linea_cuda_conformance; do
  xz -T2 -c "$(find build -name $f -type f -perm -u+x | head -1)" > "$main/.gpu/s17f/$f.xz"
done
cp "$main"/.gpu/s16f/{bench_all.xz,bench_base.xz,s13_ab.xz,conf.tar.xz} "$main/.gpu/s17f/"
git -C $W/linea log --oneline -4 > "$main/.gpu/s17f/COMMITS"
du -sh "$main/.gpu/s17f"
