import csv,sys,re,collections
sassf,csvf,kern=sys.argv[1],sys.argv[2],sys.argv[3]
# offset -> (line key, instr) from nvdisasm -gi
lines=open(sassf).read().split('\n')
start=[i for i,l in enumerate(lines) if l.startswith('//-----') and kern in l][0]
end=next((i for i in range(start+1,len(lines)) if lines[i].startswith('//-----')),len(lines))
chain=[];prev=True;omap={}
for l in lines[start:end]:
    if l.strip().startswith('//##'):
        if prev: chain=[];prev=False
        chain.append(l);continue
    m=re.match(r'\s*/\*([0-9a-f]+)\*/\s+(.*?);',l)
    if m:
        prev=True;key=None
        for c in chain:
            mm=re.findall(r'perkey_delta_kernel.hpp", line (\d+)',c)
            if mm: key=int(mm[0]);break
        omap[int(m.group(1),16)]=(key,m.group(2).strip())
rows=list(csv.reader(open(csvf)))
rows=rows[:next(j for j in range(1,len(rows)) if rows[j] and rows[j][0]=="Kernel Name")]
hdr=rows[1];data=rows[2:];ix={h:i for i,h in enumerate(hdr)}
base=int(data[0][ix['Address']],16)
stallcols=[h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
def g(r,k):
    try:return float(r[ix[k]].replace(',',''))
    except:return 0.0
per=collections.defaultdict(collections.Counter);mism=0;tot=0
for r in data:
    off=int(r[ix['Address']],16)-base
    key,ins=omap.get(off,(None,'?'))
    src=r[ix['Source']].strip()
    if ins.split()[0] not in src: mism+=1
    s=g(r,'Warp Stall Sampling (All Samples)');tot+=s
    per[key]['samples']+=s; per[key]['exec']+=g(r,'Instructions Executed')
    for c in stallcols: per[key][c]+=g(r,c)
print('mismatches',mism,'of',len(data),'total samples',tot)
T=collections.Counter()
for k in per:
    for c in stallcols: T[c]+=per[k][c]
print('overall:',', '.join(f'{c[6:]} {v/tot*100:.1f}%' for c,v in T.most_common(8)))
for k in sorted(per,key=lambda k:-per[k]['samples'])[:45]:
    p=per[k];top=sorted(((p[c],c[6:]) for c in stallcols),reverse=True)[:3]
    print(f"line {k}: {p['samples']/tot*100:5.1f}%  exec/warp-chunk {p['exec']/(128*128):7.1f}  "+', '.join(f'{n} {v/tot*100:.1f}' for v,n in top))
def group(lo,hi,name):
    G=collections.Counter()
    for k in per:
        if k is not None and lo<=k<=hi:
            for c in stallcols+['samples','exec']: G[c]+=per[k][c]
    s=G['samples']
    print(f"{name}: {s/tot*100:.1f}% of samples, exec/CTA-chunk {G['exec']/(128*128):.0f}; "+', '.join(f'{c[6:]} {G[c]/s*100:.1f}%' for c in sorted(stallcols,key=lambda c:-G[c])[:7]))
import os
if os.environ.get("OLD"): group(141,372,"producers"); group(375,541,"consumers")
else: group(141,400,"producers"); group(401,575,"consumers")
