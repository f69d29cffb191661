#!/bin/bash
B=/tmp/grad12/build
/tmp/grad12/build_units.sh gated_delta delta simple_gla additive kda gla gdn2 backward_test main
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $B/main.o $B/backward_test.o $B/*.inst.o -o $B/tests && echo "linked tests $(date -u +%T)"
$L $B/conf.o $B/*.inst.o -o $B/conf && echo "linked conf $(date -u +%T)"
