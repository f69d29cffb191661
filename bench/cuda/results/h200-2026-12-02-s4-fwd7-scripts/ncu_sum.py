# Condenses ncu's CSV (one metric: gpu__time_duration.sum) to "id name grid µs" lines, fill kernels left out.
import csv, re, sys
rows = list(csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')))
head, body = rows[0], rows[1:]
ix = {k: i for i, k in enumerate(head)}
for r in body:
    name = r[ix["Kernel Name"]]
    if "fill_kernel" in name: continue
    short = re.sub(r"\(.*", "", name)
    short = re.sub(r"linea::|cuda_detail::|write_rule<|decay::|update::|std::|, ", lambda m: "," if m.group(0) == ", " else "", short)[:70]
    v = float(r[ix["Metric Value"]].replace(",", ""))
    unit = r[ix["Metric Unit"]]
    us = v / 1000 if unit.startswith("n") else v * 1000 if unit.startswith("m") else v / 1e6 if unit == "" else v
    print(f'{r[ix["ID"]]:>4} {short:<70} {r[ix["Grid Size"]]:>16} {us:9.1f}')
