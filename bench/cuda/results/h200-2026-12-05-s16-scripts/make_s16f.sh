#!/usr/bin/env bash
# Session 16 (no device lent): the carry directory .gpu/s16f for the next session's first call, so that call checks
# the tree that would land — main at the end of session 16 with flip15.patch applied (session 13's three switches on
# by default) — rather than session 15's build of it. Then, on the device (carry [".gpu/s16f"], timeout_s 560):
#   S=.gpu/s16f LIMIT=500 bash bench/cuda/results/h200-2026-12-05-s15-scripts/call3.sh
# bench_base, bench_all and s13_ab stay session 15's (built from 712d3fe by session 13's build_local.sh: the A/B of the
# switches themselves, which session 16's changes do not touch), as do the conformance vectors.
# ~35 min on 2 cores (nvcc). Run from /work/main.
set -euo pipefail
main=$(pwd); W=/tmp/flip16
rm -rf $W && git clone -q "$main" $W/linea && cd $W/linea
git am -q bench/cuda/results/h200-2026-12-05-s15-scripts/flip15.patch
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLINEA_BUILD_TESTS=ON -DLINEA_BUILD_TOOLS=ON \
      -DLINEA_CUDA_GENCODE="-gencode=arch=compute_90a,code=sm_90a" > /dev/null
make -C build -j2 linea_cuda_tests linea_cuda_conformance
mkdir -p "$main/.gpu/s16f"
for f in linea_cuda_tests linea_cuda_conformance; do
  xz -T2 -c "$(find build -name $f -type f -perm -u+x | head -1)" > "$main/.gpu/s16f/$f.xz"
done
cp "$main"/.gpu/s15f/{bench_all,bench_base,s13_ab}.xz "$main/.gpu/s16f/"
# the shared vectors as session 15 carried them, plus the option cases (g_gamma, normalize, in-kernel gates) as options/
rm -rf $W/conf && mkdir -p $W/conf && tar xJf "$main/.gpu/s15f/conf.tar.xz" -C $W/conf
python3 tools/conformance/option_cases.py $W/conf/options
tar cJf "$main/.gpu/s16f/conf.tar.xz" -C $W/conf .
git -C $W/linea log --oneline -3 > "$main/.gpu/s16f/COMMITS"
du -sh "$main/.gpu/s16f"
