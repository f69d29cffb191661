#!/usr/bin/env bash
# bench/run_gpu.sh — everything CUDA on a GPU machine, in one go: build (unless LINEA_GPU_BUILD already holds the
# binaries), the CUDA test suite, the conformance vectors on the CUDA forms, compute-sanitizer (memcheck,
# racecheck) on small runs, linea's benchmarks and fla's Triton kernels timed in the same run; prints the table.
#
#   bench/run_gpu.sh                      # build into build-gpu/ (needs Eigen, doctest, nlohmann_json, nvcc)
#   LINEA_GPU_BUILD=dir bench/run_gpu.sh  # use binaries built elsewhere (dir/tests/backend/cuda/linea_cuda_tests, ...)
#   DEPS=dir bench/run_gpu.sh             # no CMake: nvcc with Eigen, doctest, nlohmann, xsimd headers from dir
#   LOG=dir                               # where logs go (default: $OUT if set, else build dir/gpu-logs)
#   SKIP="sanitize fla"                   # leave steps out (tests conformance sanitize bench fla)
# fla: `pip install fla-core` there, or put its wheel in .whl/ (installed into /tmp/site for this run).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LINEA_GPU_BUILD:-$ROOT/build-gpu}
LOG=${LOG:-${OUT:-$BUILD/gpu-logs}}
SKIP=${SKIP:-}  # words: tests conformance memcheck racecheck bench long fla
LIMIT=${LIMIT:-}  # e.g. "timeout 150": a cap on each step
mkdir -p "$LOG"
TESTS=$BUILD/tests/backend/cuda/linea_cuda_tests
BENCH=$BUILD/bench/cuda/linea_cuda_bench
SEGBENCH=$BUILD/bench/cuda/linea_segments_bench
CONF=$BUILD/tools/linea_cuda_conformance
CONF_DIR=${LINEA_CONFORMANCE_DIR:-$ROOT/../shared/conformance}
[ -d "$CONF_DIR" ] || CONF_DIR=$ROOT/shared/conformance
skip() { [[ " $SKIP " == *" $1 "* ]]; }

if [ ! -x "$TESTS" ] || [ ! -x "$BENCH" ]; then
  if [ -n "${DEPS:-}" ]; then  # header dependencies in a folder: plain nvcc, no CMake
    echo "== build (nvcc, DEPS=$DEPS)"
    time "$ROOT/bench/cuda/build_nvcc.sh" "$BUILD" > "$LOG/build.log" 2>&1 || { tail -n 40 "$LOG/build.log"; exit 1; }
    grep -iE "spill|warning" "$LOG/build.log" | sort | uniq -c | head -n 20
  else
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DLINEA_CUDA=ON -DLINEA_BUILD_EXAMPLES=OFF || exit 1
    cmake --build "$BUILD" -j "$(nproc)" --target linea_cuda_tests linea_cuda_bench linea_segments_bench linea_cuda_conformance || exit 1
  fi
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$LOG/gpu.txt"
status=0

if ! skip tests; then
  echo "== CUDA test suite"
  $LIMIT "$TESTS" 2>&1 | tee "$LOG/tests.log" | grep -E "ERROR|error|TEST CASE|test cases|assertions" | head -n 60
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if ! skip conformance && [ -x "$CONF" ]; then
  echo "== conformance vectors, CUDA forms ($CONF_DIR)"
  $LIMIT "$CONF" "$CONF_DIR/fla" "$CONF_DIR/linea" > "$LOG/conformance.log" 2>&1 || status=1
  grep -c '^PASS' "$LOG/conformance.log" | sed 's/^/PASS lines: /'
  grep -E '^FAIL' "$LOG/conformance.log" | head -n 20
  tail -n 3 "$LOG/conformance.log"
fi
for tool in memcheck racecheck; do
  if ! skip $tool; then
    echo "== compute-sanitizer --tool $tool (small runs of every kernel)"
    $LIMIT compute-sanitizer --tool "$tool" --error-exitcode 9 "$TESTS" -ts=sanitize > "$LOG/sanitize-$tool.log" 2>&1
    rc=$?; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases" "$LOG/sanitize-$tool.log"; echo "exit $rc"; [ $rc = 0 ] || status=1
  fi
done
if ! skip bench; then
  echo "== linea CUDA benchmarks"
  $LIMIT "$BENCH" ${BENCH_ARGS:-} 2>&1 | tee "$LOG/linea.jsonl"
fi
if ! skip long && [ -x "$SEGBENCH" ]; then
  # 8x4096, 2x16384, 1x32768 and one 32768 + 63 x 512 packed, whole and segmented; context parallelism with
  # simulated ranks at T = 262144 and 1048576 (bench/cuda/segments_bench.cu)
  echo "== linea long sequences and context parallelism"
  $LIMIT "$SEGBENCH" 2>&1 | tee "$LOG/segments.jsonl"
fi
if ! skip fla; then
  echo "== fla Triton kernels (same run)"
  if ls "$ROOT"/.whl/*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$ROOT"/.whl/*.whl \
      && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  fi
  FLA_FLASH_QLA=0 FLA_FLASH_KDA=0 FLA_TILELANG=0 PYTHONUNBUFFERED=1 python3 "$ROOT/bench/cuda/fla_bench.py" 2>&1 | tee "$LOG/fla.jsonl"
  skip long || FLA_FLASH_QLA=0 FLA_FLASH_KDA=0 FLA_TILELANG=0 PYTHONUNBUFFERED=1 python3 "$ROOT/bench/cuda/fla_long_bench.py" 2>&1 | tee "$LOG/fla_long.jsonl"
fi
echo
python3 "$ROOT/bench/cuda/table.py" "$LOG/linea.jsonl" "$LOG/fla.jsonl" | tee "$LOG/table.md"
exit $status
