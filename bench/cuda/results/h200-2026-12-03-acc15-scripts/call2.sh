#!/usr/bin/env bash
# acc15's second device call: this branch's driver after call 1 (every tensor over its bound now named), linked from
# objects built off-device; the open cases (261: its hidden second tensor; 337 of seed 20261216; acc9's 418, 1768),
# the four cases, the fresh seed 20261216's 400, and the backward cases of seed 20261207's 3000.
set -u
B=/tmp/acc15; mkdir -p $B
export PATH=/usr/local/cuda/bin:$PATH
t0=$(date +%s)
for f in objs/*.inst.o.gz objs/cuda_fuzz.o.gz; do gunzip -c $f > $B/$(basename $f .gz); done
nvcc -gencode=arch=compute_90a,code=sm_90a $B/cuda_fuzz.o $B/*.inst.o -o $B/fuzz_new > $OUT/build.txt 2>&1
echo "linked at $(( $(date +%s) - t0 )) s" >> $OUT/build.txt
for sc in "20261214 168" "20261215 261" "20261215 271" "20261207 2199" "20261216 337" "20261207 418" "20261207 1768"; do
  set -- $sc; echo "seed $1"; timeout 60 $B/fuzz_new --seed $1 --from $2 --to $(($2 + 1)) | grep '^RESULT'
done > $OUT/cases.txt 2>&1
echo "cases at $(( $(date +%s) - t0 )) s" >> $OUT/build.txt
SEED=20261216 N=400 P=8 BUDGET=40 CASE_TIMEOUT=20 LOG=$B/fz16 bash tests/backend/cuda/fuzz/run_fuzz.sh $B/fuzz_new > $OUT/fuzz_seed20261216.txt 2>&1
SEED=20261207 N=3000 P=8 BUDGET=40 CASE_TIMEOUT=20 LOG=$B/fz07 bash tests/backend/cuda/fuzz/run_fuzz.sh $B/fuzz_new --form backward > $OUT/fuzz_seed20261207_backward.txt 2>&1
echo "fuzz at $(( $(date +%s) - t0 )) s" >> $OUT/build.txt
