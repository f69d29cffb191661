#!/usr/bin/env bash
# bench/cuda/build_nvcc.sh — builds the CUDA binaries with nvcc alone (no CMake, no installed packages): for GPU
# machines that have nvcc but not linea's header dependencies. DEPS names a folder holding Eigen/ (eigen3),
# doctest/, nlohmann/ and xsimd/. Translation units compile in parallel.
#
#   DEPS=.gpu/deps bench/cuda/build_nvcc.sh build-gpu
# GENCODE overrides the code generation flags (default: sm_90a code and compute_80 PTX, as CI builds).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUTDIR=${1:-$ROOT/build-gpu}
DEPS=$(cd "${DEPS:?set DEPS to the folder with Eigen (eigen3/), doctest/, nlohmann/, xsimd/}" && pwd)
NVCC=${NVCC:-nvcc}
JOBS=${JOBS:-$(nproc)}
GENCODE=${GENCODE:-"-gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_80,code=compute_80"}
FLAGS="-std=c++20 -O3 -DNDEBUG $GENCODE
  --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills
  -I$ROOT/include -I$ROOT/tests -I$ROOT/tools -I$DEPS -I$DEPS/eigen3"
mkdir -p "$OUTDIR/obj" "$OUTDIR/tests/backend/cuda" "$OUTDIR/bench/cuda" "$OUTDIR/tools"
# The CUDA forms of linea's rules compile once (tests/backend/cuda/instances/, one TU per rule); every other TU
# declares them extern (-DLINEA_CUDA_EXTERN_INSTANCES) and links their objects, as the CMake build does.
instances=("$ROOT"/tests/backend/cuda/instances/*.cu)
srcs=("$ROOT"/tests/backend/cuda/*.cu "$ROOT/bench/cuda/bench_cuda.cu" "$ROOT/bench/cuda/segments_bench.cu"
      "$ROOT/tools/linea_cuda_conformance.cu")
# NCCL (context_parallel through NCCL in the tests) where the toolkit ships it.
NCCL_LINK=""
for d in /usr/local/cuda/lib /usr/local/cuda/lib64; do
  if [ -e "$d/libnccl.so" ]; then NCCL_LINK="-L$d -Xlinker -rpath=$d -lnccl"; FLAGS="$FLAGS -DLINEA_TEST_NCCL"; break; fi
done
{ for s in "${instances[@]}"; do echo "I $s"; done; for s in "${srcs[@]}"; do echo "E $s"; done; } |
  xargs -P "$JOBS" -L 1 sh -c \
    'o="$0/obj/$(basename "$2" .cu)$([ "$1" = I ] && echo .inst).o"; d=$([ "$1" = E ] && echo -DLINEA_CUDA_EXTERN_INSTANCES);
     '"$NVCC"' '"$(echo $FLAGS)"' $d -c "$2" -o "$o" || { echo "FAILED: $2"; exit 255; }' "$OUTDIR"
inst_objs=()
for s in "${instances[@]}"; do inst_objs+=("$OUTDIR/obj/$(basename "$s" .cu).inst.o"); done
objs=()
for s in "$ROOT"/tests/backend/cuda/*.cu; do objs+=("$OUTDIR/obj/$(basename "$s" .cu).o"); done
LINK="$NVCC -gencode=arch=compute_90a,code=sm_90a"
$LINK "${objs[@]}" "${inst_objs[@]}" $NCCL_LINK -o "$OUTDIR/tests/backend/cuda/linea_cuda_tests"
$LINK "$OUTDIR/obj/bench_cuda.o" "${inst_objs[@]}" -o "$OUTDIR/bench/cuda/linea_cuda_bench"
$LINK "$OUTDIR/obj/segments_bench.o" "${inst_objs[@]}" -o "$OUTDIR/bench/cuda/linea_segments_bench"
$LINK "$OUTDIR/obj/linea_cuda_conformance.o" "${inst_objs[@]}" -o "$OUTDIR/tools/linea_cuda_conformance"
echo "built: $OUTDIR/{tests/backend/cuda/linea_cuda_tests,bench/cuda/linea_cuda_bench,bench/cuda/linea_segments_bench,tools/linea_cuda_conformance}"
