#!/usr/bin/env bash
# Lead's final device call 2 (warm, right after call 1): chunkwise forward benchmarks (identity + CCQ, V = 128)
# and issue #16's Python script (overhead, torch vs bench/cuda, CUDA pytest, fla's op tests with linea swapped in).
set -u
cd "$(dirname "$0")"
F=$PWD; R=$(cd ../.. && pwd)
export PATH=/usr/local/cuda/bin:$PATH
START=$(date +%s)
el() { echo "== $1 at $(( $(date +%s) - START )) s"; }
mkdir -p bg && tar -xJf bins.tar.xz -C bg && for x in nanobind fla_tests wheels; do ln -sfn $F/extra/$x $R/$x; done
B=$PWD/bg; C=$(cd ../conformance && pwd)
el module
(cd $R && bash $F/device_build.sh > $OUT/python_build.log 2>&1; echo "module build rc $?" >> $OUT/python_build.log); tail -2 $OUT/python_build.log
ls $R/python/linea/ | tr '\n' ' '; echo
el bench
timeout 60 $B/linea_cuda_bench --chunk-only --v128-only > $OUT/bench_chunk.jsonl 2>&1; echo "bench chunk rc $?"
grep -c '"ms"' $OUT/bench_chunk.jsonl
el python
cd $R
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl wheels/*.whl > $OUT/pip.log 2>&1
PYTHONPATH=$PWD/python:/tmp/site LINEA_CONFORMANCE_DIR=$C CPP_JSONL=$OUT/bench_chunk.jsonl OUT=$OUT/py3 REST_CAP=110 FLA_CAP=110 \
  timeout 330 bash bench/python/h200.sh > $OUT/h200_py.log 2>&1; echo "h200.sh rc $?"
tail -45 $OUT/h200_py.log
el done
