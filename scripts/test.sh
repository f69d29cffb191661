#!/usr/bin/env bash
# Builds everything (Release) and runs the test suite without the `slow` label: unit tests, the package
# test, and the conformance runner on ../shared/conformance; then builds the Python package and runs its pytest
# suite (scripts/test_python.sh). Installs missing Debian packages first.
# Extra arguments go to ctest (for example: scripts/test.sh -R conformance).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

"$root/scripts/install-deps.sh"
configure -DLINEA_BUILD_TESTS=ON -DLINEA_BUILD_BENCH=ON -DLINEA_BUILD_TOOLS=ON -DLINEA_BUILD_EXAMPLES=ON
cmake --build "$build" -j"$jobs"
cd "$build"
ctest -LE slow --output-on-failure -j2 "$@"
"$root/scripts/test_python.sh"
