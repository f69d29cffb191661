#!/usr/bin/env bash
# Session 13's prepared calls: build here (no GPU needed), then run call1.sh (checks) and call2.sh (timings) on the
# H200 with carry [".gpu/s13"] (~51 MB).
# CMake builds of the same main tree under session 13's three switches (all off by default, none run on a GPU yet):
#   LINEA_BWD_STATE16_PER_KEY=1      kda, gdn2, gla with 16-bit inputs on the 16-bit state passes' PerKey form
#   LINEA_BWD_STATE16_RING_ADDING=1  the rules that only add on the two-stage ring at narrow tiles
#   LINEA_BWD_PER_KEY_INTER=1        per-key phase 4's products over V in inter_grad_kernel, the UT adjoints in
#                                    ut_grad_kernel, per_key_grad_kernel's Inter form
# "all" (every switch on): linea_cuda_tests, linea_cuda_bench, linea_cuda_conformance; "base" (main's defaults),
# "passes" (the first two), "inter" (the third): linea_cuda_bench only, for the A/B. ~9 min a configuration on 2 cores.
set -eu
SRC=${SRC:-/work/main}; W=${W:-/tmp/s13build}
# sm_90a only, as CI builds (the CMake default adds compute_80 PTX: 4× the bytes, ~160 MB xz'd, past a call's carry)
export LINEA_CUDA_GENCODE="-gencode=arch=compute_90a,code=sm_90a"
rm -rf $W && mkdir -p $W && git clone -q $SRC $W/linea && cp -r $SRC/../shared $W/shared
cd $W/linea
conf() {  # name, flags, targets
  cmake -S . -B build-$1 -DCMAKE_BUILD_TYPE=Release -DLINEA_CUDA=ON -DLINEA_CUDA_GENCODE="$LINEA_CUDA_GENCODE" \
    -DCMAKE_CUDA_FLAGS="$2" > /dev/null
  make -C build-$1 $3 -j2
}
P="-DLINEA_BWD_STATE16_PER_KEY=1 -DLINEA_BWD_STATE16_RING_ADDING=1"; I="-DLINEA_BWD_PER_KEY_INTER=1"
conf all "$P $I" "linea_cuda_tests linea_cuda_bench linea_cuda_conformance"
# the CUDA fuzz driver on the "all" instances, the switches on (GENCODE carries them to its unit)
GENCODE="-gencode=arch=compute_90a,code=sm_90a $P $I" DEPS=/usr/include \
  bash tests/backend/cuda/fuzz/build_fuzz.sh build-all/fuzz build-all/liblinea_cuda_instances.a
conf base "" linea_cuda_bench
conf passes "$P" linea_cuda_bench
conf inter "$I" linea_cuda_bench
D=$SRC/.gpu/s13; rm -rf $D; mkdir -p $D
# the A/B of the per-key passes and phase 4 on one workspace (bench/cuda/s13_ab.cu; both forms instantiated directly)
nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
  -diag-suppress=20012,20013,20015,68,186 -Iinclude -isystem /usr/include/eigen3 bench/cuda/s13_ab.cu -o s13_ab
xz -T2 -6 -c s13_ab > $D/s13_ab.xz
xz -T2 -6 -c build-all/tests/backend/cuda/linea_cuda_tests > $D/linea_cuda_tests.xz
xz -T2 -6 -c build-all/tools/linea_cuda_conformance > $D/linea_cuda_conformance.xz
xz -T2 -6 -c build-all/fuzz/cuda_fuzz > $D/cuda_fuzz.xz
for c in all base passes inter; do xz -T2 -6 -c build-$c/bench/cuda/linea_cuda_bench > $D/bench_$c.xz; done
tar cJf $D/conf.tar.xz -C $SRC/.. shared/conformance --transform 's,^shared/,,'
ls -la $D; du -sh $D   # ~50 MB expected with sm_90a only: within a call's 64 MiB carry
