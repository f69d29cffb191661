# Shared by demo.sh and test.sh: repository root, build directory, parallelism.
# LINEA_BUILD_DIR overrides the build directory (default: <repo>/build), LINEA_JOBS the job count, and
# LINEA_CONFORMANCE_DIR where the conformance vectors are (default: ../shared/conformance beside the repo).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LINEA_BUILD_DIR:-$root/build}"
jobs="${LINEA_JOBS:-$(nproc)}"
configure() {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    ${LINEA_CONFORMANCE_DIR:+"-DLINEA_CONFORMANCE_DIR=$LINEA_CONFORMANCE_DIR"} "$@"
}
