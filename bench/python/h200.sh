#!/usr/bin/env bash
# issue #16 on the H200, one device call (the lead's final call): the Python module's call overhead and its torch
# path against bench/cuda, python/tests with CUDA tensors, and fla's own op tests with linea in place of fla's.
#
#   BENCH_CUDA=/path/to/linea_cuda_bench bash bench/python/h200.sh          # from the repository root
#   CPP_JSONL=<bench_cuda --chunk-only --warm-ms 1000 output> bash bench/python/h200.sh   # rows measured earlier
#   (WARM_MS: how long each rule's call runs before the 8x4096 rows are timed, in both programs; default 1000)
#   (REST_CAP, FLA_CAP: the caps in seconds of the non-CUDA pytest run and of each fla test file)
#
# Expects: linea importable (the module built for the device's Python, e.g. by .gpu/fin2/device_build.sh, its
# python/ on PYTHONPATH), torch with CUDA, pytest, fla (fla_core) and einops on PYTHONPATH; LINEA_CONFORMANCE_DIR
# for python/tests' conformance cases; FLA_TESTS: fla's tests/ops/test_*.py files (default: fla_tests/). Writes
# its logs into $OUT (default: bench/python/out). About 4 minutes: the timings first, on a quiet host, then the
# test runs in parallel, each with its own cap.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-bench/python/out}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
FLA_TESTS=${FLA_TESTS:-fla_tests}
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
export PYTHONUNBUFFERED=1
python3 -c "import linea, torch; print('linea', linea.__file__, 'cuda', linea._linea.has_cuda, 'torch', torch.__version__,
  torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')"

# (c) bench/cuda's chunkwise rows (the C++ figure the torch path is held to), then (b) + (c) the Python timings in
# one process: the call overhead for numpy / torch CPU / torch CUDA and the 8x4096 comparison for all 7 rules.
# Both programs run each rule's call WARM_MS before timing it, so both time the board in a long run's state
# (bench/README.md, "linear_attn against bench/cuda": bench/cuda's rows are ~25 ms bursts otherwise).
WARM_MS=${WARM_MS:-1000}
el cpp-bench
if [ -n "${CPP_JSONL:-}" ]; then
  CPP=(--cpp "$CPP_JSONL")                    # bench/cuda rows measured earlier in the same device call
elif [ -n "${BENCH_CUDA:-}" ]; then
  timeout 40 "$BENCH_CUDA" --chunk-only --no-ccq --v128-only --warm-ms "$WARM_MS" > "$OUT/cpp_chunk.jsonl" 2>&1
  echo "cpp bench rc $?"
  CPP=(--cpp "$OUT/cpp_chunk.jsonl")
else
  echo "BENCH_CUDA not set: the 8x4096 table has no bench/cuda column"; CPP=()
fi
el python-speed
timeout 160 python3 bench/python_overhead.py -n 1000 --runs 3 --large --warm-ms "$WARM_MS" "${CPP[@]}" \
  > "$OUT/python_speed.md" 2>&1
echo "python_overhead rc $?"; cat "$OUT/python_speed.md"

# (a) python/tests with CUDA tensors (test_cuda.py first: it is the CUDA suite), (d) fla's tests, in parallel.
el tests
( cd python/tests && { timeout 120 python3 -m pytest -q -rfE -p no:cacheprovider test_cuda.py > "$OUT/pytest_cuda.log" 2>&1; echo "pytest cuda rc $?" >> "$OUT/pytest_cuda.log"; } ) &
( cd python/tests && { timeout ${REST_CAP:-150} python3 -m pytest -q -rfE -p no:cacheprovider --ignore=test_cuda.py > "$OUT/pytest_rest.log" 2>&1; echo "pytest rest rc $?" >> "$OUT/pytest_rest.log"; } ) &
if [ -d "$FLA_TESTS" ]; then
  for form in chunk fused_recurrent; do
    for f in "$FLA_TESTS"/test_*.py; do
      b=$(basename "$f" .py)
      (timeout ${FLA_CAP:-140} python3 tools/run_fla_tests.py $form "$f" -- -v -rfE --tb=line -p no:randomly -W ignore \
         > "$OUT/fla_${form}_$b.log" 2>&1; echo "rc $?" >> "$OUT/fla_${form}_$b.log") &
    done
  done
else
  echo "no $FLA_TESTS: fla's tests not run"
fi
wait
el collect
tail -n 3 "$OUT/pytest_cuda.log" "$OUT/pytest_rest.log"
for f in "$OUT"/fla_*.log; do
  [ -f "$f" ] || continue
  echo "### $(basename "$f" .log): $(grep -c ' PASSED' "$f") passed, $(grep -c ' FAILED' "$f") failed, $(grep -c ' SKIPPED' "$f") skipped"
  grep -E "^(FAILED|ERROR) |^=+ .*(passed|failed|error|deselected).* =+$|^rc " "$f" | cut -c1-400
done > "$OUT/fla.log"
grep -E "^### |^rc " "$OUT/fla.log"
el done
