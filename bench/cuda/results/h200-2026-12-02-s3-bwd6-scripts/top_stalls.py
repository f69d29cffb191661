import csv, sys
for path in sys.argv[1:]:
    print("#####", path)
    rows = list(csv.reader(open(path, errors="replace")))
    blocks, cur = [], None
    for r in rows:
        if any(c.strip() in ("Source", "Address") for c in r) and any("Sampling" in c for c in r):
            cur = [r, []]; blocks.append(cur)
        elif cur is not None and len(r) == len(cur[0]):
            cur[1].append(r)
        elif len(r) == 1 or (cur is not None and len(r) != len(cur[0])):
            print("  line:", ",".join(r)[:200])
    for hdr, body in blocks:
        si = [i for i, c in enumerate(hdr) if "Sampling (All" in c]
        if not si:
            print("no sampling col", hdr[:10]); continue
        si = si[0]
        src = hdr.index("Source") if "Source" in hdr else 1
        stall = [i for i, c in enumerate(hdr) if "stall" in c.lower() and "Sampling" not in c]
        def f(x):
            try: return float(x.replace(",", ""))
            except: return 0.0
        tot = sum(f(r[si]) for r in body)
        # per-column stall totals
        col_tot = sorted(((sum(f(r[i]) for r in body), hdr[i]) for i in stall), reverse=True)[:10]
        print("== kernel block: %d lines, samples %.0f" % (len(body), tot))
        print("   stall totals:", "; ".join("%s=%.0f" % (n, v) for v, n in col_tot))
        for r in sorted(body, key=lambda r: -f(r[si]))[:30]:
            top = sorted(((f(r[i]), hdr[i]) for i in stall), reverse=True)[:3]
            print("%6.0f %5.1f%% | %-60s | %s" % (f(r[si]), 100*f(r[si])/max(tot,1), r[src][:60], ", ".join("%s %.0f" % (n[:28], v) for v, n in top if v)))
