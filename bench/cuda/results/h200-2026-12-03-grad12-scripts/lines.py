import re,sys,collections
cur=None; want=sys.argv[2]; cnt=collections.Counter(); src=None
for line in open(sys.argv[1]):
    m=re.match(r'\s+\.type\s+(\S+),@function',line)
    if m: cur=m.group(1); continue
    m=re.search(r'//## File "([^"]+)", line (\d+)',line)
    if m: src=(m.group(1).split('/')[-1],int(m.group(2))); continue
    if cur and want == cur and re.match(r'\s+/\*[0-9a-f]{4,}\*/',line): cnt[src]+=1
tot=sum(cnt.values()); print('total',tot)
byfile=collections.Counter()
for (f,l),c in cnt.items(): byfile[f]+=c
print(byfile.most_common())
for (k,c) in sorted(cnt.items(), key=lambda x:-x[1])[:int(sys.argv[3])]: print(c,k)
