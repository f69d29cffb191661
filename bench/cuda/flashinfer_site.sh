#!/usr/bin/env bash
# bench/cuda/flashinfer_site.sh OUTDIR — build, on the CPU machine, the slim `pip --target` site that runs FlashInfer's
# Hopper Gated DeltaNet prefill (flashinfer_bench.py) on the H200, which has no internet, as two xz tarballs:
#   OUTDIR/fi_site.tar.xz     ~2.8 MB: the 91 FlashInfer 0.7.4 modules the GDN prefill imports
#                             (flashinfer_site_files.txt), nvidia-cutlass-dsl 4.8.1's Python (libs-base + libs-core,
#                             without the IKET profiler), apache-tvm-ffi 0.1.12 (cp312, without its C++ sources)
#   OUTDIR/cutlass_so.tar.xz  ~52 MB: the CuTe DSL compiler and runtime of nvidia-cutlass-dsl-libs-cu13 4.8.1
#                             (_cutlass_ir.cu13...so 193 MB + libcute_dsl_runtime.so 44 MB, one xz stream with the x86
#                             filter and a 256 MiB dictionary: the runtime repeats much of the compiler's code)
# The second takes 5 min of one core on an idle machine (25 min on a loaded one). On the device:
#   tar -xJf fi_site.tar.xz -C S; tar -xJf cutlass_so.tar.xz -C S
#   PYTHONPATH=S:S/nvidia_cutlass_dsl/dsl_packages python3 bench/cuda/flashinfer_bench.py
# (the .pth file that adds dsl_packages is not read from PYTHONPATH). Device image: torch, cuda-bindings,
# nvidia-ml-py, einops, filelock, jinja2, requests, tqdm, packaging are there already.
set -eu
OUT=$(realpath -m "$1"); HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d); S=$W/site; mkdir -p "$OUT" "$S" "$W/whl"
P="--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64"
python3 -m pip download -q --no-deps $P -d "$W/whl" flashinfer-python==0.7.4 nvidia-cutlass-dsl==4.8.1 \
  nvidia-cutlass-dsl-libs-base==4.8.1 nvidia-cutlass-dsl-libs-core==4.8.1 nvidia-cutlass-dsl-libs-cu13==4.8.1 \
  apache-tvm-ffi==0.1.12
python3 -m pip install -q --no-index --no-deps --no-compile --target "$S" $P \
  "$W"/whl/nvidia_cutlass_dsl*.whl "$W"/whl/apache_tvm_ffi*.whl
# FlashInfer: only the modules the GDN prefill imports; two package __init__ files that re-export every op family
# (and so pull in MoE, GEMM, attention) are replaced by stubs. Nothing else of FlashInfer's code is changed.
mkdir -p "$W/fi" && unzip -q "$W"/whl/flashinfer_python-0.7.4-*.whl -d "$W/fi"
(cd "$W/fi" && tar -cf - -T "$HERE/flashinfer_site_files.txt" flashinfer_python-0.7.4.dist-info/METADATA) | tar -xf - -C "$S"
printf '# slim site: only the GDN prefill is carried; import flashinfer.gdn_prefill directly\n__version__ = "0.7.4"\n' \
  > "$S/flashinfer/__init__.py"
printf '# slim site: the GDN prefill needs only flashinfer.cute_dsl.availability and .utils\n' > "$S/flashinfer/cute_dsl/__init__.py"
# Trim what the prefill never loads: the IKET profiler (its import is guarded), tvm_ffi's C++ sources and headers,
# stubs, licenses and RECORDs (this is a throw-away measurement site, not a redistribution).
rm -rf "$S/nvidia_cutlass_dsl/dsl_packages/iket" "$S/bin" "$S"/tvm_ffi/{3rdparty,src,include,cython,stub,share} \
  "$S"/*.dist-info/licenses
find "$S" -name RECORD -delete; find "$S" -name '*.pyi' -delete; find "$S" -name __pycache__ -prune -exec rm -rf {} +
for m in "$S"/*.dist-info/METADATA; do awk 'NF==0{exit} {print}' "$m" | grep -v '^Classifier\|^Project-URL' > "$m.t"; mv "$m.t" "$m"; done
IR=nvidia_cutlass_dsl/dsl_packages/cutlass/_mlir/_mlir_libs/_cutlass_ir.cu13.cpython-312-x86_64-linux-gnu.so
RT=nvidia_cutlass_dsl/cu13/lib/libcute_dsl_runtime.so
mkdir -p "$W/cu13" && unzip -q "$W"/whl/nvidia_cutlass_dsl_libs_cu13-*.whl -d "$W/cu13"
(cd "$W/cu13" && tar -cf - --exclude='*.so' --exclude='*.a' --exclude='*/stubs' nvidia_cutlass_dsl) | tar -xf - -C "$S"
tar -cf - -C "$S" . | xz -9e -T1 > "$OUT/fi_site.tar.xz"
tar -cf - -C "$W/cu13" "$IR" "$RT" | xz --x86 --lzma2=preset=9e,dict=256MiB -T1 > "$OUT/cutlass_so.tar.xz"
ls -l "$OUT"
rm -rf "$W"
