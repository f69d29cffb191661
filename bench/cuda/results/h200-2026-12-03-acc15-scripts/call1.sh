#!/usr/bin/env bash
# acc15's one device call: link the fuzz driver of this branch and main d94ad0e's (objects built off-device from
# the same tree, gzip-compressed in objs/: the nine instance units, cuda_fuzz.o of each), then, with both drivers:
# the four open cases and a fresh seed's cases 0-399. Run from the worktree copy's root (.gpu/acc15).
set -u
B=/tmp/acc15; mkdir -p $B
export PATH=/usr/local/cuda/bin:$PATH
S=bench/cuda/results/h200-2026-12-03-acc15-scripts
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/build.txt 2>&1
for f in objs/*.o.gz; do gunzip -c $f > $B/$(basename $f .gz); done
L="nvcc -gencode=arch=compute_90a,code=sm_90a"
$L $B/cuda_fuzz.o $B/*.inst.o -o $B/fuzz_new >> $OUT/build.txt 2>&1 &
$L $B/cuda_fuzz_main.o $B/*.inst.o -o $B/fuzz_main >> $OUT/build.txt 2>&1 &
wait
echo "linked at $(( $(date +%s) - t0 )) s" >> $OUT/build.txt; ls -la $B/fuzz_* >> $OUT/build.txt
for d in main new; do
  echo "== $d"
  for sc in "20261214 168" "20261215 261" "20261215 271" "20261207 2199"; do
    set -- $sc; echo "seed $1"; timeout 60 $B/fuzz_$d --seed $1 --from $2 --to $(($2 + 1)) | grep '^RESULT'
  done
done > $OUT/cases.txt 2>&1
echo "cases at $(( $(date +%s) - t0 )) s" >> $OUT/build.txt
for d in main new; do
  SEED=20261216 N=400 P=8 BUDGET=40 CASE_TIMEOUT=20 LOG=$B/fz_$d bash tests/backend/cuda/fuzz/run_fuzz.sh $B/fuzz_$d > $OUT/fuzz_$d.txt 2>&1
  grep '^RESULT' $B/fz_$d.all | sort -n -k2 | cut -c1-400 > $OUT/fuzz_${d}_results.txt
  echo "fuzz $d at $(( $(date +%s) - t0 )) s" >> $OUT/build.txt
done
