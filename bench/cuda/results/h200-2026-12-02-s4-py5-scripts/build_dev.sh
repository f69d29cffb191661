#!/usr/bin/env bash
# py5: the device's linea._linea (Python 3.12) and linea_cuda_bench, built on the CPU machine (no build on the device:
# its cold start leaves too little of the 150 s cap). CUDA forms: fin5's liblinea_cuda_instances.a (the merged tree's
# CMake build, PIC, sm_90a; no CUDA code changed on main since). The rule units (CPU forms + host dispatch) at -O1:
# only their CUDA dispatch runs on the device, and it is host code overlapped by 0.3 ms kernels.
set -u
export PATH=/usr/local/cuda/bin:$PATH
R=/work/wt/py5; D=/work/main/.gpu/deps; NB=/tmp/py5/nanobind; O=/tmp/py5/dev/obj; A=/tmp/py5/liblinea_cuda_instances.a
PYINC=/root/.pyenv/versions/3.12.1/include/python3.12
NV="nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -I$R/include -I$D -I$D/eigen3"
CX="g++ -std=c++20 -DNDEBUG -fPIC -march=x86-64-v3 -fvisibility=hidden -fno-strict-aliasing -I$R/include -I$D -I$D/eigen3 -isystem $PYINC -I$NB/include -I$NB/ext/robin_map/include"
step() { local t0=$(date +%s); "$@" || echo "FAILED: $*"; echo "$(( $(date +%s) - t0 )) s: ${@: -1}"; }
if [ "${1:-}" = nvcc ]; then
  step nice $NV -Xcompiler=-fPIC -DLINEA_PYTHON_HAS_CUDA -DLINEA_CUDA_EXTERN_INSTANCES -c $R/python/src/cuda/rules.cu -o $O/py_rules.o
  step nice $NV -Xptxas -warn-spills -I$R/tests -I$R/tools -DLINEA_CUDA_EXTERN_INSTANCES -c $R/bench/cuda/bench_cuda.cu -o $O/bench_cuda.o
  exit 0
fi
step nice $CX -O3 -DLINEA_PYTHON_HAS_CUDA -c $R/python/src/module.cpp -o $O/module.o
step nice $CX -DNB_BUILD -Os -c $NB/src/nb_combined.cpp -o $O/nanobind.o
for r in additive simple_gla gla delta gated_delta kda gdn2; do
  step nice $CX -O1 -DLINEA_PYTHON_HAS_CUDA -c $R/python/src/rules/$r.cpp -o $O/rule_$r.o
done
