#!/usr/bin/env bash
# How ccq9's device binaries were built on the shared machine (nvcc 13.0, one TU at a time), from the branch root.
# main's headers: `git archive 16a7383 include` unpacked into /tmp/ccq9/main_include; mainc / newc: copies of main's /
# the branch's headers with ccq_chunk_kernel's grid back to dim3(slots, HV) (chunks fastest: blockIdx.x = slot,
# blockIdx.y = hv), the grid main had before fwd7-ccq-grid.
set -eu
W=/tmp/ccq9
FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr
  -diag-suppress=20012,20013,20015,68,186 -Itests -Itools -I/work/main/.gpu/deps -I/work/main/.gpu/deps/eigen3"
side() { nvcc $FLAGS -I"$2" -Dlinea=linea_$1 -DAB_SIDE=$1 -c bench/cuda/ccq_ab/side.cu -o $W/obj/side_$1.o; }
side main $W/main_include/include
side mainc $W/mainc_include/include
side new include
side newc $W/newc_include/include
nvcc $FLAGS -c bench/cuda/ccq_ab/main.cu -o $W/obj/main.o
nvcc -gencode=arch=compute_90a,code=sm_90a $W/obj/main.o $W/obj/side_{mainc,main,new,newc}.o -o $W/ccq_ab
nvcc $FLAGS -Iinclude bench/cuda/ccq_ab/suite.cu -o $W/ccq_suite   # ~3.5 min
