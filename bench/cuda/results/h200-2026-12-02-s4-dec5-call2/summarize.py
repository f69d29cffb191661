# Summarises linea_cuda_bench --decode-variants: fraction of copy per (rule, variant, indices), min-max over rounds.
import json, sys, collections
rows = collections.defaultdict(list)
copies = []
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("kind") == "round":
        copies.append(r["copy_tbps"])
    elif r.get("kind") == "decode_variant":
        rows[(r["rule"], r["variant"], r["indices"])].append(r["copy_frac"])
    elif r.get("kind") == "decode":  # linea::step (main's instances: main's decode_kernel)
        rows[(r["rule"], "linea::step", r["indices"])].append(r["copy_frac"])
print("copy TB/s per round:", copies)
variants = ["decode_kernel", "main_decode_kernel", "pipelined", "linea::step"]
rules = sorted({k[0] for k in rows})
for ind in ["none", "device", "device_in_order", "device_swap"]:
    print("indices:", ind)
    print("%-18s" % "rule" + "".join("%-20s" % v for v in variants))
    for rule in rules:
        cells = []
        for v in variants:
            x = rows.get((rule, v, ind))
            cells.append("%-20s" % ((" ".join("%.3f" % y for y in x)) if x else "-"))
        print("%-18s" % rule + "".join(cells))
