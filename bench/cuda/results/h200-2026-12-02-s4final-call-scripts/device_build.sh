#!/usr/bin/env bash
# linea._linea for the device's Python (3.12): python/src/cuda/rules.cu (dispatch) + the CPU units + nanobind,
# linked with the PIC instance objects that call1.sh built on the device ($BD/obj/*.inst.o, bench/cuda/build_nvcc.sh
# with -Xcompiler=-fPIC). Run from the repository root.
set -u
export PATH=/usr/local/cuda/bin:$PATH
PY=${PY:-python3}
BD=${BD:-build-dev}
PYINC=$($PY -c "import sysconfig;print(sysconfig.get_paths()['include'])")
EXT=$($PY -c "import sysconfig;print(sysconfig.get_config_var('EXT_SUFFIX'))")
D=.gpu/deps
O=pyobj; mkdir -p $O
NV="nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xcompiler=-fPIC -Iinclude -I$D -I$D/eigen3"
CX="g++ -std=c++20 -O3 -DNDEBUG -fPIC -march=native -fvisibility=hidden -fno-strict-aliasing -Iinclude -I$D -I$D/eigen3 -isystem $PYINC -Inanobind/include -Inanobind/ext/robin_map/include"
jobs=("$NV -DLINEA_PYTHON_HAS_CUDA -DLINEA_CUDA_EXTERN_INSTANCES -c python/src/cuda/rules.cu -o $O/py_rules.o")
for r in additive simple_gla gla delta gated_delta kda gdn2; do
  jobs+=("$CX -DLINEA_PYTHON_HAS_CUDA -c python/src/rules/$r.cpp -o $O/rule_$r.o")
done
jobs+=("$CX -DLINEA_PYTHON_HAS_CUDA -c python/src/module.cpp -o $O/module.o")
jobs+=("$CX -DNB_BUILD -Os -c nanobind/src/nb_combined.cpp -o $O/nanobind.o")
printf '%s\n' "${jobs[@]}" | xargs -P 16 -I{} sh -c '{} || echo "FAILED: {}"'
g++ -shared -o python/linea/_linea$EXT $O/*.o $BD/obj/*.inst.o -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -lpthread && echo "built python/linea/_linea$EXT"
