#!/usr/bin/env bash
# tests/backend/cuda/fuzz/run_fuzz.sh — runs the CUDA fuzz driver on one GPU: P processes (shards of the case
# indices) side by side, each restarted after a crash or a hang from the case after the one that failed, until
# the cases or the time budget run out; then a summary per (rule, form, dtype) and every failure in full.
#   SEED=1 N=400 P=8 BUDGET=70 CASE_TIMEOUT=20 LOG=/tmp/fuzz tests/backend/cuda/fuzz/run_fuzz.sh path/to/cuda_fuzz [extra args]
set -u
BIN=$1; shift
SEED=${SEED:-1}; N=${N:-400}; P=${P:-8}; BUDGET=${BUDGET:-70}; TO=${CASE_TIMEOUT:-20}; LOG=${LOG:-/tmp/cuda_fuzz}
start=$(date +%s)
shard() {
  local r=$1 from=0 left rc last
  : > "$LOG.$r"
  while :; do
    left=$((start + BUDGET - $(date +%s)))
    [ "$left" -le 0 ] && { echo "BUDGET shard $r stopped at $from" >> "$LOG.$r"; break; }
    timeout -s KILL $((left + TO + 5)) "$BIN" --seed "$SEED" --from "$from" --to "$N" --shard "$r/$P" --budget "$left" \
      --case-timeout "$TO" "$@" >> "$LOG.$r" 2>&1
    rc=$?
    [ $rc -eq 0 ] && break
    last=$(grep '^BEGIN' "$LOG.$r" | tail -1 | awk '{print $2}')
    [ -z "$last" ] && { echo "RESULT -1 FAIL ? ? ? ? worst=0 | shard $r | exited $rc before any case" >> "$LOG.$r"; break; }
    if ! grep -q "^RESULT $last " "$LOG.$r"; then  # died inside the case (signal, abort): no RESULT line of its own
      echo "RESULT $last FAIL $("$BIN" --seed "$SEED" --from "$last" --to $((last + 1)) --list | cut -d' ' -f2-5) worst=0 | $("$BIN" --seed "$SEED" --from "$last" --to $((last + 1)) --list | cut -d' ' -f2-) | process died (exit $rc)" >> "$LOG.$r"
    fi
    from=$((last + 1))
  done
}
for r in $(seq 0 $((P - 1))); do shard "$r" "$@" & done
wait
cat "$LOG".[0-9]* > "$LOG.all"
echo "== seed $SEED, cases [0, $N), $P processes, $(( $(date +%s) - start )) s"
echo "== failures (seed $SEED; rerun one: cuda_fuzz --seed $SEED --from I --to I+1)"
grep '^RESULT [-0-9]* FAIL' "$LOG.all" | sort -n -k2 || true
echo "== ill-conditioned (over the bound by what the inputs' conditioning estimate explains; judge_conditioning)"
grep '^RESULT [-0-9]* ILLCOND' "$LOG.all" | sort -n -k2 || true
echo "== rejections"
grep '^RESULT [-0-9]* REJECT' "$LOG.all" | sed 's/.*| //' | sed 's/ ([0-9]* ms)//' | sort | uniq -c | sort -rn | head -30
echo "== per (rule, form, dtype)"
grep '^RESULT' "$LOG.all" | awk '
  { key = $4 " " $5 " " $6; n[key]++; s[key, $3]++; total[$3]++
    w = $8; sub("worst=", "", w); if (w + 0 > worst[key]) worst[key] = w + 0 }
  END {
    printf " %-11s %-10s %-5s %5s %5s %6s %7s %5s %s\n", "rule", "form", "dtype", "cases", "pass", "reject", "illcond", "FAIL", "worst err/tol"
    for (k in n) { split(k, a, " "); printf "%-12s %-10s %-5s %5d %5d %6d %7d %5d %.3g\n", a[1], a[2], a[3], n[k], s[k, "PASS"], s[k, "REJECT"], s[k, "ILLCOND"], s[k, "FAIL"], worst[k] }
    printf "total: %d PASS, %d REJECT, %d ILLCOND, %d FAIL\n", total["PASS"], total["REJECT"], total["ILLCOND"], total["FAIL"]
  }' | LC_ALL=C sort
