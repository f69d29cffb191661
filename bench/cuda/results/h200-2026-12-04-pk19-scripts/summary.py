#!/usr/bin/env python3
"""pk19 call 1's summary: perkey_check.jsonl's verdicts and perkey_ab.jsonl's times (new = this branch's kernel,
the library's; derived = the same with DerivedFactors; old = main 6dca2f0's; other = the rule's other kernel)."""
import json, sys, os

out = sys.argv[1] if len(sys.argv) > 1 else "."

def rows(name):
    p = os.path.join(out, name)
    if not os.path.exists(p):
        print(f"(no {name})")
        return []
    r = []
    for line in open(p):
        line = line.strip()
        if line.startswith("{"):
            try:
                r.append(json.loads(line))
            except ValueError:
                print("unparsed:", line[:200])
        elif line:
            print(f"{name}: {line[:200]}")
    return r

check = [r for r in rows("perkey_check.jsonl") if r.get("kind") in ("pipeline_ab", "features_ab")]
fails = [r for r in check if not r.get("pass")]
print(f"== --check: {len(check) - len(fails)} of {len(check)} cases pass "
      "(new bit-identical to old; new, derived finite and within 1e-2 of float64)")
if check:
    same = sum(1 for r in check if r.get("new_bit_identical_old"))
    print(f"   new bit-identical to old: {same} of {len(check)}")
    for key in ("ref_o_new", "ref_state_new", "ref_o_derived", "ref_state_derived", "ref_o_old", "ref_state_old",
                "o_derived_old", "state_derived_old"):
        vals = [r[key] for r in check if key in r and r[key] >= 0]
        if vals:
            print(f"   {key:18s} max {max(vals):.2e}  min {min(vals):.2e}")
for r in fails:
    print("   FAIL", json.dumps({k: r[k] for k in r if k in ("kind", "rule", "B", "T", "K", "gates", "gated",
          "misaligned_gates", "lower_bound", "finite", "new_bit_identical_old", "o_new_old", "ref_o_new",
          "ref_o_derived", "ref_state_derived")}))

ab = rows("perkey_ab.jsonl")
print("\n== time (ms, CUDA events, bf16 H=16 K=V=128, best median of interleaved rounds)")
print(f"{'rule':6s} {'gates':9s} {'B×T':>9s} {'new':>8s} {'derived':>8s} {'old':>8s} {'other':>8s} "
      f"{'old/new':>8s} {'old/der':>8s}  o_der_old  same")
for r in ab:
    if r.get("kind") != "pipeline_ab":
        continue
    n, d, o = r["new_ms"], r["derived_ms"], r["old_ms"]
    print(f"{r['rule']:6s} {r['gates']:9s} {str(r['B']) + '×' + str(r['T']):>9s} {n:8.4f} {d:8.4f} {o:8.4f} "
          f"{r['other_ms']:8.4f} {o / n:8.3f} {o / d:8.3f}  {r['o_derived_old']:.2e}  {r['new_bit_identical_old']}")
print("\n== the library's path (linea::chunkwise; kda, gdn2, gla on perkey_delta_kernel, DerivedFactors as launch.hpp takes it)")
for r in ab:
    if r.get("kind") == "perkey_chunkwise":
        print(f"{r['rule']:6s} {r['B']}×{r['T']}: {r['ms']:.4f} ms (whole {r['whole_ms']:.4f}), "
              f"{r['copy_frac']:.3f} of copy" + (f", other kernel {r['other_kernel_ms']:.4f}" if "other_kernel_ms" in r else ""))
