#!/usr/bin/env python3
"""pko2: the table of call 1's timings (time.jsonl) and check counts (check.jsonl, checks.txt)."""
import json, statistics, sys
d = sys.argv[1] if len(sys.argv) > 1 else "bench/cuda/results/h200-2026-12-04-pko2-call1"
rows = [json.loads(l) for l in open(f"{d}/time.jsonl") if l.startswith("{")]
copy = [r["copy_tbps"] for r in rows if r.get("kind") == "device"]
print("copy TB/s:", copy)
t = [r for r in rows if r.get("kind") == "time"]
keys = []
for r in t:
    k = (r["rule"], r["path"], r["B"], r["T"])
    if k not in keys: keys.append(k)
print("| rule | path | shape | piece | old ms (proc 1 / 2) | new ms (proc 1 / 2) | old ÷ new (1 / 2) | all 18 old [min, max] | all 18 new [min, max] | copy fraction old → new |")
print("|---|---|---|---|---|---|---|---|---|---|")
for k in keys:
    rs = sorted([r for r in t if (r["rule"], r["path"], r["B"], r["T"]) == k], key=lambda r: r["process"])
    olds = [x for r in rs for x in r["old"]]; news = [x for r in rs for x in r["new"]]
    mo, mn = statistics.median(olds), statistics.median(news)
    j = lambda f: " / ".join(f"{r[f]:.3f}" for r in rs)
    print(f"| {k[0]} | {k[1]} | {k[2]}×{k[3]} | {rs[0]['piece']} | {mo:.3f} ({j('old_ms')}) | "
          f"**{mn:.3f}** ({j('new_ms')}) | {mo / mn:.3f} ({j('old_over_new')}) | "
          f"[{min(olds):.3f}, {max(olds):.3f}] | [{min(news):.3f}, {max(news):.3f}] | "
          f"{statistics.mean(r['copy_frac_old'] for r in rs):.3f} → {statistics.mean(r['copy_frac_new'] for r in rs):.3f} |")
c = [json.loads(l) for l in open(f"{d}/check.jsonl") if l.startswith("{")]
cases = [r for r in c if r.get("kind") == "outputs_ab"]
print(f"check: {len(cases)} cases, {sum(r['pass'] for r in cases)} pass, {sum(r['new_bit_identical_old'] for r in cases)} bit-identical,"
      f" {sum(r['unwritten'] for r in cases)} unwritten")
