#!/usr/bin/env python3
"""pko: a summary of call 1's outputs (perkey_check.jsonl, perkey_ab.jsonl, lib.jsonl, ncu.csv) in the directory given."""
import csv, json, statistics, sys
from pathlib import Path

d = Path(sys.argv[1])


def rows(name):
    f = d / name
    if not f.exists():
        return []
    out = []
    for line in f.read_text().splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


check = rows("perkey_check.jsonl")
cases = [r for r in check if r.get("kind") in ("pipeline_ab", "features_ab", "outputs_ab")]
print(f"--check: {len(cases)} cases, {sum(r['pass'] for r in cases)} pass, "
      f"{sum(r['new_bit_identical_old'] for r in cases)} new bit-identical to old")
for kind in ("pipeline_ab", "features_ab", "outputs_ab"):
    k = [r for r in cases if r["kind"] == kind]
    if k:
        print(f"  {kind}: {len(k)} cases, {sum(r['pass'] for r in k)} pass")
for key in ("ref_o_new", "ref_state_new", "ref_o_exact", "ref_state_exact", "ref_o_old"):
    v = [r[key] for r in cases if key in r and r[key] >= 0]
    if v:
        print(f"  max {key}: {max(v):.2e}")
for r in cases:
    if not r["pass"]:
        print("  FAIL", json.dumps(r)[:300])

ab = [r for r in rows("perkey_ab.jsonl") if r.get("kind") == "pipeline_ab"]
copy = [r["copy_tbps"] for r in rows("perkey_ab.jsonl") if r.get("kind") == "device"]
print(f"\nkernels launched directly (ms, best median of 3 interleaved rounds; copy {copy[0] if copy else '?'} TB/s)")
print("| rule | B×T | gates | new (sectors) | old (pairs) | old ÷ new | exact (sectors, no DerivedFactors) | other kernel | bit-identical |")
print("|---|---|---|---|---|---|---|---|---|")
for r in ab:
    print(f"| {r['rule']} | {r['B']}×{r['T']} | {r['gates']} | {r['new_ms']:.4f} | {r['old_ms']:.4f} | "
          f"{r['old_ms'] / r['new_ms']:.3f} | {r['exact_ms']:.4f} | {r['other_ms']:.4f} | {r['new_bit_identical_old']} |")

lib = [r for r in rows("lib.jsonl") if r.get("kind") == "perkey_chunkwise"]
if lib:
    print("\nlibrary path linea::chunkwise, 8×4096 (ms; 3 processes a build alternating, 3 rounds each: median / best)")
    print("| rule | pairs (main) | sectors (pko) | pairs ÷ sectors (medians) | copy fraction pairs / sectors |")
    print("|---|---|---|---|---|")
    for rule in ("kda", "gdn2", "gla"):
        m = {}
        for b in ("pairs", "sectors"):
            v = [r for r in lib if r["rule"] == rule and r.get("build") == b]
            if v:
                m[b] = (statistics.median(x["ms"] for x in v), min(x["ms"] for x in v),
                        statistics.median(x["copy_frac"] for x in v), len(v))
        if len(m) == 2:
            p, s = m["pairs"], m["sectors"]
            print(f"| {rule} | {p[0]:.4f} / {p[1]:.4f} (n={p[3]}) | {s[0]:.4f} / {s[1]:.4f} (n={s[3]}) | "
                  f"{p[0] / s[0]:.3f} | {p[2]:.3f} / {s[2]:.3f} |")

f = d / "ncu.csv"
if f.exists():
    lines = [l for l in f.read_text().splitlines() if l.startswith('"')]
    if lines:
        print("\nncu (one launch each: old, new for kda, gdn2, gla in that order)")
        data = list(csv.DictReader(lines))
        by = {}
        for r in data:
            by.setdefault(r["ID"], {})[r["Metric Name"]] = (r["Metric Value"], r["Metric Unit"])
            by[r["ID"]]["_name"] = r["Kernel Name"][:60]
        for i, m in by.items():
            print(i, m.pop("_name"), "; ".join(f"{k}={v[0]} {v[1]}" for k, v in sorted(m.items())))
