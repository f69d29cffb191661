import csv,sys,collections
f=sys.argv[1]
rows=list(csv.reader(open(f)))
hdr=rows[1]; data=rows[2:]
ix={h:i for i,h in enumerate(hdr)}
def g(r,k):
    try: return float(r[ix[k]].replace(',',''))
    except: return 0.0
tot=collections.Counter(); insts=0
kinds=collections.Counter(); kinds_exec=collections.Counter()
stallcols=[h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
for r in data:
    src=r[ix['Source']].strip(); op=src.split()[0] if src else ''
    if op.startswith('@'): op=src.split()[1]
    base=op.split('.')[0]
    e=g(r,'Instructions Executed'); insts+=e
    kinds_exec[base]+=e
    s=g(r,'Warp Stall Sampling (All Samples)'); kinds[base]+=s
    for c in stallcols: tot[c]+=g(r,c)
print('instructions', len(data), 'executed warp-insts', insts, 'per warp', insts/65536)
S=sum(tot.values()); print('samples',S)
for k,v in tot.most_common(): print(f'  {k:24s} {v:10.0f} {v/S*100:5.1f}%')
print('by opcode: samples%, exec per warp')
E=sum(kinds_exec.values())
for k,v in kinds.most_common(25): print(f'  {k:10s} {v/S*100:5.1f}%  {kinds_exec[k]/65536:9.0f}  ({kinds_exec[k]/E*100:4.1f}% of insts)')
