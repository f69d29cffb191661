import csv,sys,collections
f=sys.argv[1]
rows=list(csv.reader(open(f)))
hdr=rows[1]; data=rows[2:]
ix={h:i for i,h in enumerate(hdr)}
def g(r,k):
    try: return float(r[ix[k]].replace(',',''))
    except: return 0.0
base=int(data[0][0],16)
# bucket by 1KB of code (64 instrs)
B=int(sys.argv[2]) if len(sys.argv)>2 else 64
b=collections.defaultdict(lambda: collections.Counter())
for i,r in enumerate(data):
    k=i//B
    c=b[k]
    c['s']+=g(r,'Warp Stall Sampling (All Samples)'); c['noi']+=g(r,'stall_no_inst'); c['wait']+=g(r,'stall_wait')
    c['ssb']+=g(r,'stall_short_sb'); c['e']+=g(r,'Instructions Executed'); c['hmma']+= g(r,'Instructions Executed') if 'HMMA' in r[1] else 0
    c['bar']+=g(r,'stall_barrier'); c['lsb']+=g(r,'stall_long_sb')
S=sum(c['s'] for c in b.values())
for k in sorted(b):
    c=b[k]
    if c['s']/S>0.004:
        print(f"{k*B:6d} samp {c['s']/S*100:5.1f}% noinst {c['noi']/S*100:4.1f}% wait {c['wait']/S*100:4.1f}% ssb {c['ssb']/S*100:4.1f}% lsb {c['lsb']/S*100:4.1f}% bar {c['bar']/S*100:4.1f}% exec/warp {c['e']/65536:7.0f} hmma/warp {c['hmma']/65536:5.0f}")
