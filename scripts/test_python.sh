#!/usr/bin/env bash
# Builds the Python package (pip install of the checkout into a virtual environment under the build directory)
# and runs its pytest suite (python/tests). Called by test.sh; runs alone too. Needs pip access to PyPI (the
# build backend scikit-build-core, nanobind, numpy, pytest). LINEA_PYTHON=python3.x picks the interpreter.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

python="${LINEA_PYTHON:-python3}"
venv="$build/python-venv"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
# The extension's CMake build is kept in the build directory, so a second run rebuilds only what changed. Where
# scripts/test.sh's CMake build made linea's CUDA forms (liblinea_cuda_instances.a, same gencode), the extension's
# CUDA part links them instead of compiling every kernel a second time (python/CMakeLists.txt).
settings=(--config-settings=build-dir="$build/python-build")
if [ -f "$build/liblinea_cuda_instances.a" ]; then
  settings+=(--config-settings=cmake.define.LINEA_PYTHON_CUDA_INSTANCES="$build/liblinea_cuda_instances.a")
fi
CMAKE_BUILD_PARALLEL_LEVEL="$jobs" "$venv/bin/pip" install --quiet --disable-pip-version-check "${settings[@]}" \
  "$root[test]"
cd "$root/python/tests"
"$venv/bin/python" -m pytest -q "$@"
