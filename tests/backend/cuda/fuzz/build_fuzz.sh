#!/usr/bin/env bash
# tests/backend/cuda/fuzz/build_fuzz.sh — builds the CUDA fuzz driver (device-only; not in CMake or CI).
#   tests/backend/cuda/fuzz/build_fuzz.sh OUT_DIR [INSTANCES]
# INSTANCES: a liblinea_cuda_instances.a (or the instance objects) built from the same tree (CMake's, or
# bench/cuda/build_nvcc.sh's objects); without it the driver compiles every kernel it calls itself (much longer).
# DEPS: a folder with doctest/, eigen3/, nlohmann/, xsimd/ when they are not in /usr/include.
set -eu
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
OUT=${1:?output directory}
INST=${2:-}
NVCC=${NVCC:-nvcc}
GENCODE=${GENCODE:-"-gencode=arch=compute_90a,code=sm_90a"}
DEPS=${DEPS:-/usr/include}
mkdir -p "$OUT"
EXTERN=""
[ -n "$INST" ] && EXTERN="-DLINEA_CUDA_EXTERN_INSTANCES"
$NVCC -std=c++20 -O2 -DNDEBUG $GENCODE --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 $EXTERN \
  -I"$ROOT/include" -I"$ROOT/tests" -I"$DEPS" -I"$DEPS/eigen3" -c "$ROOT/tests/backend/cuda/fuzz/cuda_fuzz.cu" -o "$OUT/cuda_fuzz.o"
$NVCC $GENCODE "$OUT/cuda_fuzz.o" $INST -o "$OUT/cuda_fuzz"
echo "built $OUT/cuda_fuzz"
