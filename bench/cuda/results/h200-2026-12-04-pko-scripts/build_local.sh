#!/usr/bin/env bash
# pko: the call's binaries, built on the workstation (nvcc 13, sm_90a) and carried xz'd in .gpu/pko/bin:
#   perkey_ab      bench/cuda/perkey_delta_ab.cu standalone (no extern instances): the library's per-key strips in
#                  full sectors (this branch's default)
#   perkey_ab_old  the same unit with -DLINEA_PERKEY_PAIR_STORES: the library's strips in pairs (main's form), for
#                  the library rows of the A/B
#   tests          linea_cuda_tests as CMake groups it (light, consistency, backward_test, scalar_delta2_test),
#                  extern instances, against every instance unit
# Run in the worktree's root: J=2 bash bench/cuda/results/h200-2026-12-04-pko-scripts/build_local.sh
set -u
R=$(pwd); W=${W:-/tmp/pko}; J=${J:-2}; mkdir -p $W/obj $W/bin
export PATH=/usr/local/cuda/bin:$PATH
export FLAGS="-std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -diag-suppress=20012,20013,20015,68,186 -Xptxas -warn-spills -I$R/include -I$R/tests -I$R/tools -isystem /usr/include/eigen3"
T=tests/backend/cuda
for f in main errors_test launch_options_test neg_inf_test plan_test segments_test tiles_test; do
  echo "#include \"$R/$T/$f.cu\""; done > $W/light_tests.cu
for f in rules_test sanitize_test; do echo "#include \"$R/$T/$f.cu\""; done > $W/consistency_tests.cu
{ echo "A $R/bench/cuda/perkey_delta_ab.cu ab_new"
  echo "A $R/bench/cuda/perkey_delta_ab.cu ab_old -DLINEA_PERKEY_PAIR_STORES"
  for s in $T/instances/*.cu; do echo "I $R/$s $(basename $s .cu).inst"; done
  for s in $W/light_tests.cu $W/consistency_tests.cu $R/$T/backward_test.cu $R/$T/scalar_delta2_test.cu; do
    echo "E $s $(basename $s .cu)"; done; } |
  xargs -P $J -L 1 sh -c '
    o="'$W'/obj/$2.o"; s=$(date +%s)
    case "$0" in I) d=-DLINEA_CUDA_EXTERN_BACKWARD_PHASES;; E) d="-DLINEA_CUDA_EXTERN_BACKWARD_PHASES -DLINEA_CUDA_EXTERN_INSTANCES";; *) d="$3";; esac
    nice -n 10 nvcc $FLAGS $d -c "$1" -o "$o" > "$o.log" 2>&1 && echo "ok $2 $(( $(date +%s) - s )) s" || echo "FAILED $2"'
I=$(ls $W/obj/*.inst.o)
nvcc -gencode=arch=compute_90a,code=sm_90a $W/obj/light_tests.o $W/obj/consistency_tests.o $W/obj/backward_test.o \
  $W/obj/scalar_delta2_test.o $I -o $W/bin/tests && echo "linked tests"
nvcc -gencode=arch=compute_90a,code=sm_90a $W/obj/ab_new.o -o $W/bin/perkey_ab && echo "linked perkey_ab"
nvcc -gencode=arch=compute_90a,code=sm_90a $W/obj/ab_old.o -o $W/bin/perkey_ab_old && echo "linked perkey_ab_old"
grep -h -B1 "spill" $W/obj/*.log | grep -E "perkey_delta|spill" | grep -c perkey_delta | sed 's/^/perkey_delta spill lines: /'
