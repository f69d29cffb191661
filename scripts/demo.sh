#!/usr/bin/env bash
# Builds linea's examples (Release) and runs the demo: every write rule on random input, against the
# float64 reference. Installs missing Debian packages first.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

"$root/scripts/install-deps.sh"
configure -DLINEA_BUILD_TESTS=OFF -DLINEA_BUILD_BENCH=OFF -DLINEA_BUILD_TOOLS=OFF -DLINEA_BUILD_EXAMPLES=ON
cmake --build "$build" -j"$jobs" --target 01_quickstart
"$build/examples/01_quickstart"
