import csv,sys,collections
f=sys.argv[1]; W=float(sys.argv[2]) if len(sys.argv)>2 else 65536
rows=list(csv.reader(open(f)))
hdr=rows[1]; data=rows[2:]
ix={h:i for i,h in enumerate(hdr)}
def g(r,k):
    try: return float(r[ix[k]].replace(',',''))
    except: return 0.0
bins=[(0,0.01),(0.01,1.5),(1.5,3),(3,8.5),(8.5,16.5),(16.5,64.5),(64.5,1e9)]
S=sum(g(r,'Warp Stall Sampling (All Samples)') for r in data)
E=sum(g(r,'Instructions Executed') for r in data)
for lo,hi in bins:
    sel=[r for r in data if lo<=g(r,'Instructions Executed')/W<hi]
    s=sum(g(r,'Warp Stall Sampling (All Samples)') for r in sel); n=sum(g(r,'stall_no_inst') for r in sel)
    e=sum(g(r,'Instructions Executed') for r in sel)
    print(f"exec/warp in [{lo},{hi}): {len(sel):6d} instrs, {e/E*100:5.1f}% of executed, {s/S*100:5.1f}% samples, no_inst {n/S*100:5.1f}%")
