#!/usr/bin/env bash
# linea._linea for the device's Python (3.12), twice in parallel: new/ (branch py4's python/) and old/ (main's,
# 602ef26), for an A/B in one call. python/src/cuda/rules.cu is the same in both (compiled once); the CUDA forms come
# from the CI-built liblinea_cuda_instances.a (602ef26's CUDA code, unchanged). Run from .gpu/py4.
set -u
export PATH=/usr/local/cuda/bin:$PATH
F=$PWD; R=$(cd ../.. && pwd)
PYINC=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
EXT=$(python3 -c "import sysconfig;print(sysconfig.get_config_var('EXT_SUFFIX'))")
D=$R/.gpu/deps; NB=$F/extra/nanobind
mkdir -p obj/new obj/old obj/shared
NV="nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xcompiler=-fPIC -I$R/include -I$D -I$D/eigen3"
CX="g++ -std=c++20 -O3 -DNDEBUG -fPIC -march=native -fvisibility=hidden -fno-strict-aliasing -I$R/include -I$D -I$D/eigen3 -isystem $PYINC -I$NB/include -I$NB/ext/robin_map/include"
jobs=("$NV -DLINEA_PYTHON_HAS_CUDA -DLINEA_CUDA_EXTERN_INSTANCES -c new/python/src/cuda/rules.cu -o obj/shared/py_rules.o")
jobs+=("$CX -DNB_BUILD -Os -c $NB/src/nb_combined.cpp -o obj/shared/nanobind.o")
for t in new old; do
  for r in simple_gla gla kda gdn2 gated_delta delta additive; do
    jobs+=("$CX -DLINEA_PYTHON_HAS_CUDA -c $t/python/src/rules/$r.cpp -o obj/$t/rule_$r.o")
  done
  jobs+=("$CX -DLINEA_PYTHON_HAS_CUDA -c $t/python/src/module.cpp -o obj/$t/module.o")
done
printf '%s\n' "${jobs[@]}" | xargs -P 18 -I{} sh -c '{} || echo "FAILED: {}"'
for t in new old; do
  g++ -shared -o $t/python/linea/_linea$EXT obj/$t/*.o obj/shared/*.o bg/liblinea_cuda_instances.a -L/usr/local/cuda/lib64 \
    -lcudart_static -ldl -lrt -lpthread && echo "built $t/python/linea/_linea$EXT"
done
