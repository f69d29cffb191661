#!/usr/bin/env bash
# Builds linea's examples (Release) and runs the demo: every write rule on random input, against the
# float64 reference; then the CCQ retrieval demo (examples/02_ccq_retrieval.cpp) and its plot.
# Installs missing Debian packages first.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

"$root/scripts/install-deps.sh"
configure -DLINEA_BUILD_TESTS=OFF -DLINEA_BUILD_BENCH=OFF -DLINEA_BUILD_TOOLS=OFF -DLINEA_BUILD_EXAMPLES=ON
cmake --build "$build" -j"$jobs" --target 01_quickstart 02_ccq_retrieval 03_training
"$build/examples/01_quickstart"
# Training with the backward: a gradient check, then the loss of a one-layer Gated DeltaNet going down.
"$build/examples/03_training"
# The CCQ retrieval demo: table on stdout, docs/ccq_retrieval.csv, and its plot docs/ccq_retrieval.png.
cd "$root"
"$build/examples/02_ccq_retrieval" docs/ccq_retrieval.csv
gnuplot -e "csv='docs/ccq_retrieval.csv'; png='docs/ccq_retrieval.png'" scripts/plot_retrieval.gp
echo "demo: wrote docs/ccq_retrieval.csv and docs/ccq_retrieval.png"
