#!/usr/bin/env bash
# Session 13's prepared call: build here (no GPU needed), then run call1.sh on the H200 with carry [".gpu/s13"].
# Two CMake builds of the same main tree: "new" with session 13's state-pass dispatch switched on
# (LINEA_BWD_STATE16_PER_KEY=1: kda, gdn2, gla with 16-bit inputs on the 16-bit state passes' PerKey form;
# LINEA_BWD_STATE16_RING_ADDING=1: the rules that only add on the two-stage ring at narrow tiles), and "base" (the
# defaults: only linea_cuda_bench is needed from it). ~9 min for "new" and ~6 for base's bench on 2 cores.
set -eu
SRC=${SRC:-/work/main}; W=${W:-/tmp/s13build}
rm -rf $W && mkdir -p $W && git clone -q $SRC $W/linea && cp -r $SRC/../shared $W/shared
cd $W/linea
cmake -S . -B build-new -DCMAKE_BUILD_TYPE=Release -DLINEA_CUDA=ON \
  -DCMAKE_CUDA_FLAGS="-DLINEA_BWD_STATE16_PER_KEY=1 -DLINEA_BWD_STATE16_RING_ADDING=1" > /dev/null
make -C build-new linea_cuda_tests linea_cuda_bench linea_cuda_conformance -j2
cmake -S . -B build-base -DCMAKE_BUILD_TYPE=Release -DLINEA_CUDA=ON > /dev/null
make -C build-base linea_cuda_bench -j2
mkdir -p $SRC/.gpu/s13
xz -T2 -6 -c build-new/tests/backend/cuda/linea_cuda_tests > $SRC/.gpu/s13/linea_cuda_tests.xz
xz -T2 -6 -c build-new/bench/cuda/linea_cuda_bench > $SRC/.gpu/s13/linea_cuda_bench.xz
xz -T2 -6 -c build-new/tools/linea_cuda_conformance > $SRC/.gpu/s13/linea_cuda_conformance.xz
xz -T2 -6 -c build-base/bench/cuda/linea_cuda_bench > $SRC/.gpu/s13/base_bench.xz
tar cJf $SRC/.gpu/s13/conf.tar.xz -C $SRC/.. shared/conformance --transform 's,^shared/,,'
ls -la $SRC/.gpu/s13
