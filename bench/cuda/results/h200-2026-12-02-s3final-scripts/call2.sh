#!/usr/bin/env bash
# Lead's final device call 2 (warm, right after call 1, which left build-dev/ and the module): chunkwise forward
# (identity + CCQ), decode, backward benchmarks, and issue #16's Python script.
set -u
cd "$(dirname "$0")"
F=$PWD; R=$(cd ../.. && pwd)
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
for x in nanobind fla_tests wheels; do ln -sfn $F/extra/$x $R/$x; done
B=$R/build-dev; C=$(cd ../conformance && pwd)
if [ ! -x $B/bench/cuda/linea_cuda_bench ]; then
  echo "build-dev lost (machine went cold): rebuilding"
  (cd $R && DEPS=.gpu/deps GENCODE="-gencode=arch=compute_90a,code=sm_90a -Xcompiler=-fPIC" JOBS=16 timeout 300 bash bench/cuda/build_nvcc.sh build-dev > $OUT/build.log 2>&1)
  (cd $R && bash $F/device_build.sh > $OUT/python_build.log 2>&1)
fi
ls $R/python/linea/ | tr '\n' ' '; echo
el bench-chunk
timeout 60 $B/bench/cuda/linea_cuda_bench --chunk-only --v128-only > $OUT/bench_chunk.jsonl 2>&1; echo "bench chunk rc $?"
grep -c '"ms"' $OUT/bench_chunk.jsonl
el bench-extra
eval "${EXTRA_BENCH:-true}"
el python
cd $R
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl wheels/*.whl > $OUT/pip.log 2>&1
PYTHONPATH=$PWD/python:/tmp/site LINEA_CONFORMANCE_DIR=$C CPP_JSONL=$OUT/bench_chunk.jsonl OUT=$OUT/py4 REST_CAP=110 FLA_CAP=110 \
  timeout 330 bash bench/python/h200.sh > $OUT/h200_py.log 2>&1; echo "h200.sh rc $?"
tail -45 $OUT/h200_py.log
el done
