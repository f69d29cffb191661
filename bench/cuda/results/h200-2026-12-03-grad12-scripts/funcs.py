import re,sys
cur=None; counts={}; order=[]
for line in open(sys.argv[1]):
    m=re.match(r'\s+\.type\s+(\S+),@function',line)
    if m:
        cur=m.group(1); n=cur.split('$')
        name=[x for x in n if x][-1]
        name=re.sub(r'_ZN5linea11cuda_detail3bwd\d+','',name)[:40]
        if 'chunk_grad_kernel' in cur and cur.count('$')==0: name='KERNEL '+re.search(r'kernelILb(\d)ELb(\d)',cur).group(0)
        cur=name; counts[cur]=0; order.append(cur); continue
    if cur and re.match(r'\s+/\*[0-9a-f]{4,}\*/',line): counts[cur]+=1
for k in order: print(counts[k],k)
