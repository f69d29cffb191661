#!/usr/bin/env bash
# Session 18, call 1 (carry [".gpu/deps", ".gpu/flip", ".gpu/conf.tar.xz"], timeout_s 600): build ON the device
# (16 cores; this checkout is new and a 2-core build takes ~55 min) and check the tree that would land:
#   .gpu/flip = main + flip15.patch + gamma17.patch (git archive); .gpu/deps = Debian's eigen3, doctest, nlohmann-json,
#   xsimd, benchmark as a CMake prefix; .gpu/conf.tar.xz = the shared vectors + option_cases.py's options/.
# 1. CMake + ninja: flip's linea_cuda_tests and linea_cuda_conformance;
# 2. the suite (LINEA_BACKWARD_ERRORS=1) and the conformance runner side by side, while flip's and main's
#    linea_cuda_bench and s13_ab build (niced) for call 2.
set -u
R=$(pwd); export PATH=/usr/local/cuda/bin:$PATH; T0=$(date +%s); LIMIT=${LIMIT:-560}
el() { echo "== $1 at $(( $(date +%s) - T0 )) s" | tee -a $OUT/build.txt; }
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
G="-gencode=arch=compute_90a,code=sm_90a"
cf() { cmake -S $1 -B $2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DLINEA_CUDA=ON -DLINEA_BUILD_TESTS=ON \
         -DLINEA_BUILD_TOOLS=ON -DLINEA_BUILD_EXAMPLES=OFF -DLINEA_SANITIZE=OFF -DLINEA_CUDA_GENCODE="$G" \
         -DCMAKE_PREFIX_PATH=$R/.gpu/deps/usr -DLINEA_CONFORMANCE_DIR=/tmp/conf/conformance >> $OUT/build.txt 2>&1; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a $OUT/build.txt
mkdir -p /tmp/conf && tar xJf .gpu/conf.tar.xz -C /tmp/conf
el configure; cf .gpu/flip /tmp/bf; cf . /tmp/bb
el build_suite
ninja -C /tmp/bf -j 18 linea_cuda_tests linea_cuda_conformance > $OUT/ninja_flip.txt 2>&1; echo "ninja rc $?" | tee -a $OUT/build.txt
grep -E "error|FAILED" $OUT/ninja_flip.txt | head
el built_suite
# the benches for call 2 in the background (niced), while the suite runs
BL=$(( $(left) - 5 ))
( nice -n 10 timeout $BL ninja -C /tmp/bf -j 12 linea_cuda_bench > $OUT/ninja_bench_flip.txt 2>&1; echo "bench flip rc $?" >> $OUT/build.txt
  nice -n 10 timeout $(( $(left) - 5 )) ninja -C /tmp/bb -j 12 linea_cuda_bench > $OUT/ninja_bench_base.txt 2>&1; echo "bench base rc $?" >> $OUT/build.txt ) &
( nice -n 10 timeout $BL nvcc -std=c++20 -O3 -DNDEBUG $G --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Iinclude \
    -isystem .gpu/deps/usr/include/eigen3 bench/cuda/s13_ab.cu -o /tmp/s13_ab > $OUT/s13_build.txt 2>&1; echo "s13_ab rc $?" >> $OUT/build.txt ) &
TB=$(find /tmp/bf -name linea_cuda_tests -type f -perm -u+x | head -1); CB=$(find /tmp/bf -name linea_cuda_conformance -type f -perm -u+x | head -1)
tl=$(( $(left) - 15 )); [ $tl -gt 330 ] && tl=330
( LINEA_BACKWARD_ERRORS=1 timeout $tl $TB > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log ) &
TP=$!
( timeout $tl $CB /tmp/conf/conformance/fla /tmp/conf/conformance/linea /tmp/conf/options > $OUT/conformance.log 2>&1; echo "conf rc $?" >> $OUT/conformance.log ) &
CP=$!
wait $TP $CP
el suite_done
grep -E "test cases|assertions|rc " $OUT/tests.log; grep -B2 -A12 -E "ERROR:|FAILED" $OUT/tests.log | head -60
grep -E '^FAIL' $OUT/conformance.log | head; tail -n 3 $OUT/conformance.log
grep -i -E "g_gamma" $OUT/conformance.log | head -8
wait
el all_done; cat $OUT/build.txt | grep -E "rc|==" 
