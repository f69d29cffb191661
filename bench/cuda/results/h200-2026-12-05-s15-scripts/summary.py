#!/usr/bin/env python3
"""Session 15's call 2: ab.jsonl (base = main's defaults, all = session 13's switches on) as a table of the best
round per (rule, shape, build), and ncu_*.csv as the summed time per kernel of one backward."""
import collections, csv, json, sys, pathlib

d = pathlib.Path(sys.argv[1])
best = collections.defaultdict(dict)
for line in (d / "ab.jsonl").read_text().splitlines():
    try:
        r = json.loads(line)
    except ValueError:
        continue
    key = (r["rule"], f'{r["B"]}x{r["T"]}')
    for f in ("fwd_ms", "bwd_ms"):
        old = best[key].get((r["bin"], f))
        best[key][(r["bin"], f)] = r[f] if old is None else min(old, r[f])
print("| rule | shape | fwd (all) | bwd base | bwd all | ratio | bwd ÷ fwd (all) |")
print("|---|---|---|---|---|---|---|")
for (rule, shape), v in sorted(best.items()):
    b, a, f = v.get(("bench_base", "bwd_ms")), v.get(("bench_all", "bwd_ms")), v.get(("bench_all", "fwd_ms"))
    if b and a:
        print(f"| {rule} | {shape} | {f:.3f} | {b:.3f} | {a:.3f} | {b / a:.2f}× | {a / f:.1f} |")
for p in sorted(d.glob("ncu_*.csv")):
    rows = [r for r in csv.reader(l for l in p.read_text().splitlines() if l.startswith('"'))]
    if not rows:
        continue
    h = rows[0]
    name, val, unit = h.index("Kernel Name"), h.index("Metric Value"), h.index("Metric Unit")
    tot = collections.defaultdict(float); cnt = collections.Counter()
    for r in rows[1:]:
        scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0}.get(r[unit], 1e-6)
        k = r[name].split("(")[0].split("<")[0].split("::")[-1]
        tot[k] += float(r[val].replace(",", "")) * scale; cnt[k] += 1
    print(f"\n{p.name}: kernel, launches, ms (all launches profiled, -c 40: ~2 backwards)")
    for k, t in sorted(tot.items(), key=lambda x: -x[1]):
        print(f"  {k:45s} {cnt[k]:3d} {t:8.3f}")
