#!/usr/bin/env bash
# Session 18: .gpu/s18f rebuilt from scratch (this checkout is new; s15f/s16f/s17f are gone): the tree that would land —
# main + flip15.patch (session 13's three switches on) + gamma17.patch — as linea_cuda_tests, linea_cuda_conformance and
# linea_cuda_bench ("bench_all"), and main's own linea_cuda_bench ("bench_base") for the A/B; s13_ab from main's
# bench/cuda/s13_ab.cu; the shared vectors + option cases as conf.tar.xz. Then on the device (carry [".gpu/s18f"]):
#   S=.gpu/s18f LIMIT=400 bash bench/cuda/results/h200-2026-12-05-s15-scripts/call3.sh
# ~55 min on 2 cores (nvcc). Run from /work/main.
set -euo pipefail
main=$(pwd); W=/tmp/s18; D="$main/.gpu/s18f"
export LINEA_CUDA_GENCODE="-gencode=arch=compute_90a,code=sm_90a"
rm -rf $W && mkdir -p $W $D
git clone -q "$main" $W/flip && git clone -q "$main" $W/base
( cd $W/flip && git am -q bench/cuda/results/h200-2026-12-05-s15-scripts/flip15.patch \
                && git am -q bench/cuda/results/h200-2026-12-05-s17-scripts/gamma17.patch )
git -C $W/flip log --oneline -3 > "$D/COMMITS"
conf() {  # tree, targets
  cmake -S $W/$1 -B $W/$1/build -DCMAKE_BUILD_TYPE=Release -DLINEA_CUDA=ON -DLINEA_BUILD_TESTS=ON -DLINEA_BUILD_TOOLS=ON \
        -DLINEA_CUDA_GENCODE="$LINEA_CUDA_GENCODE" > /dev/null
  make -C $W/$1/build -j2 $2
}
conf flip "linea_cuda_tests linea_cuda_conformance linea_cuda_bench"
for f in linea_cuda_tests linea_cuda_conformance; do
  xz -T2 -6 -c "$(find $W/flip/build -name $f -type f -perm -u+x | head -1)" > "$D/$f.xz"; done
xz -T2 -6 -c $W/flip/build/bench/cuda/linea_cuda_bench > $D/bench_all.xz
mkdir -p $W/conf && cp -r "$main/../shared/conformance" $W/conf/ && python3 "$main/tools/conformance/option_cases.py" $W/conf/options
tar cJf $D/conf.tar.xz -C $W/conf .
conf base linea_cuda_bench
xz -T2 -6 -c $W/base/build/bench/cuda/linea_cuda_bench > $D/bench_base.xz
cd $W/base && nvcc -std=c++20 -O3 -DNDEBUG $LINEA_CUDA_GENCODE --expt-relaxed-constexpr \
  -diag-suppress=20012,20013,20015,68,186 -Iinclude -isystem /usr/include/eigen3 bench/cuda/s13_ab.cu -o $W/s13_ab
xz -T2 -6 -c $W/s13_ab > $D/s13_ab.xz
ls -la $D; du -sh $D
