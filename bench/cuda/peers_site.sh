#!/usr/bin/env bash
# bench/cuda/peers_site.sh OUTDIR — the peers' Python packages for the device (no internet there), packed on a
# machine that reaches PyPI: fla-core 0.6.0 (fla's Triton kernels) and FlashQLA 0.1.3 with tilelang 0.1.15,
# apache-tvm-ffi 0.1.12 and z3-solver 4.15.4 (tilelang's needs that the device image lacks; torch, triton, numpy,
# ml-dtypes, psutil, cloudpickle, tqdm, typing-extensions are on the image and are not carried).
#
# The wheels come to 84 MB, over what one call carries beside anything else, so they are installed here into a
# site for CPython 3.12 / x86-64 and only what never runs there is left out: z3's command-line program (21 MB; the
# Python binding loads libz3.so), the second copy of libz3.so (a link instead), torch-c-dlpack-ext (prebuilt only
# for torch 2.4–2.9; torch 2.11 has the DLPack exchange API itself, which tvm-ffi checks first) and bytecode.
# Everything else stays: a first pruning that also dropped tvm-ffi's libtvm_ffi_testing.so failed every import on
# the device (tilelang's TVM loads it), and fla imports tilelang when it is importable.
# Out: OUTDIR/peers_site.tar.xz (x86 filter for the shared libraries), OUTDIR/SIZES.txt.
#
#   bash bench/cuda/peers_site.sh /work/main/.gpu/peers11
set -eu
OUTDIR=${1:?usage: peers_site.sh OUTDIR}
WORK=${WORK:-/tmp/peers_site_work}
rm -rf "$WORK" && mkdir -p "$WORK/whl" "$OUTDIR"
PLAT="--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
  --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
  --platform manylinux2014_x86_64 --platform any"
python3 -m pip download -q --no-deps $PLAT -d "$WORK/whl" \
  fla-core==0.6.0 flash-qla==0.1.3 tilelang==0.1.15 apache-tvm-ffi==0.1.12 z3-solver==4.15.4.0
python3 -m pip install -q --no-deps --no-index --no-compile --target "$WORK/site" $PLAT "$WORK"/whl/*.whl
cd "$WORK/site"
rm -rf bin/z3 build_backend.py
rm -f z3/lib/libz3.so.4.15 && ln -s libz3.so z3/lib/libz3.so.4.15
find . -name '__pycache__' -prune -exec rm -rf {} +
cd "$WORK"
tar --owner=0 --group=0 -I 'xz --x86 --lzma2=preset=9e,dict=192MiB' -cf "$OUTDIR/peers_site.tar.xz" -C site .
{ ls -l "$WORK"/whl/*.whl | awk '{print $5, $9}'; du -sb site | awk '{print $1, "site unpacked"}';
  ls -l "$OUTDIR/peers_site.tar.xz" | awk '{print $5, $9}'; } | sed "s#$WORK/##" | tee "$OUTDIR/SIZES.txt"
