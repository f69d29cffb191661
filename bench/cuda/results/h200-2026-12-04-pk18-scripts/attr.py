import re,sys,collections
fn=sys.argv[1]; kern=sys.argv[2]
lines=open(fn).read().split('\n')
# find kernel section
start=None
for i,l in enumerate(lines):
    if l.startswith('//-----') and kern in l: start=i; break
end=len(lines)
for i in range(start+1,len(lines)):
    if lines[i].startswith('//-----'): end=i; break
chain=[]; cnt=collections.Counter(); ops=collections.defaultdict(collections.Counter); prev_instr=True
for l in lines[start:end]:
    m=re.match(r'\s*//## File "([^"]+)", line (\d+)',l)
    if m:
        if prev_instr: chain=[]; prev_instr=False
        chain.append(l); continue
    m=re.match(r'\s*/\*([0-9a-f]+)\*/\s+(.*?);',l)
    if m:
        prev_instr=True
        key=None
        for c in chain:
            mm=re.findall(r'perkey_delta_kernel.hpp", line (\d+)',c)
            if mm: key=int(mm[0]); break
        ins=m.group(2).strip()
        op=re.sub(r'^@!?U?P\w+\s+','',ins).split()[0]
        cnt[key]+=1; ops[key][op.split('.')[0]]+=1
tot=sum(cnt.values())
print('total',tot)
for k in sorted(cnt, key=lambda x:(x is None, x or 0)):
    print(k, cnt[k], dict(ops[k].most_common(6)))
