#!/usr/bin/env bash
# py4's device call (#16): build old (main) and new (py4) modules, bench/cuda's chunkwise rows, the Python call
# overhead A/B (old, new, old, new; numpy, torch CPU, torch CUDA), the 8x4096 torch-vs-C++ table with interleaved rounds
# (new), SM clocks sampled throughout, python/tests' CUDA suite and fast-path tests with the new module.
set -u
cd "$(dirname "$0")"
F=$PWD; R=$(cd ../.. && pwd)
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
mkdir -p bg && tar -xJf bins.tar.xz -C bg liblinea_cuda_instances.a linea_cuda_bench; el unpacked
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu --format=csv -lms 250 > $OUT/clocks.csv 2>&1 &
CLK=$!
bash build.sh > $OUT/build.log 2>&1 &
BUILD=$!
sleep 2; timeout 45 bg/linea_cuda_bench --chunk-only --no-ccq --v128-only > $OUT/cpp_chunk.jsonl 2>&1; echo "cpp bench rc $? at $(( $(date +%s) - START )) s"
wait $BUILD; grep -E "FAILED|built|error" $OUT/build.log | cut -c1-300; el built
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site extra/wheels/*.whl > $OUT/pip.log 2>&1
timeout 30 python3 cuda_micro.py > $OUT/cuda_micro.md 2>&1; cat $OUT/cuda_micro.md; el micro
B=$F/new/bench/python_overhead.py
for t in old new old new; do
  echo "### overhead $t"; PYTHONPATH=$F/$t/python timeout 30 python3 $B -n 1000 --runs 1 2>&1 | tail -8
done > $OUT/overhead_ab.md; cat $OUT/overhead_ab.md; el ab
PYTHONPATH=$F/new/python timeout 60 python3 $B --large-only --rounds 4 --cpp $OUT/cpp_chunk.jsonl > $OUT/large_new.md 2>&1; cat $OUT/large_new.md; el large
kill $CLK
cd new/python/tests && PYTHONPATH=$F/new/python:/tmp/site LINEA_CONFORMANCE_DIR=$R/.gpu/conformance timeout 60 python3 -m pytest -q -rfE -p no:cacheprovider test_cuda.py test_fast_path.py > $OUT/pytest_new.log 2>&1; echo "pytest rc $?"; tail -3 $OUT/pytest_new.log
el done
