# Shared by demo.sh and test.sh: repository root, build directory, parallelism.
# LINEA_BUILD_DIR overrides the build directory (default: <repo>/build); LINEA_JOBS the job count.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LINEA_BUILD_DIR:-$root/build}"
jobs="${LINEA_JOBS:-$(nproc)}"
configure() {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@"
}
