import re, sys, collections
def funcs(path):
    src = open(path).read()
    out = {}
    for m in re.finditer(r'\.visible \.entry (\S+)\(', src):
        name = m.group(1)
        start = m.end()
        # body: from the first '{' after the param list to the matching '}'
        i = src.index('{', start); depth = 0; j = i
        while True:
            if src[j] == '{': depth += 1
            elif src[j] == '}':
                depth -= 1
                if depth == 0: break
            j += 1
        out[name] = src[i:j]
    return out
def norm(body):
    # registers renamed in order of appearance; labels too; drop comments / .loc
    lines = [l.strip() for l in body.split('\n')]
    lines = [l for l in lines if l and not l.startswith('.loc') and not l.startswith('//') and not l.startswith('.reg')]
    names = {}
    def ren(m):
        k = m.group(0)
        if k not in names: names[k] = '%%%s%d' % (re.match(r'%([a-z]+)', k).group(1), len(names))
        return names[k]
    labels = {}
    def lab(m):
        k = m.group(0)
        if k not in labels: labels[k] = 'L%d' % len(labels)
        return labels[k]
    txt = '\n'.join(lines)
    txt = re.sub(r'%[a-z]+\d+', ren, txt)
    txt = re.sub(r'\$L__\w+', lab, txt)
    return txt.split('\n')
def ops(lines):
    c = collections.Counter()
    for l in lines:
        op = l.split()[0] if l.split() else ''
        if op.startswith('@'): op = l.split()[1]
        c[op] += 1
    return c
a, b = funcs(sys.argv[1]), funcs(sys.argv[2])
def newname(n):
    return [n] + [n[:m.start() + 1] + 'Lb0E' + n[m.start() + 1:] for m in re.finditer('EEEv', n)]
for n in sorted(a):
    if 'state16' not in n and 'inter_grad' not in n: continue
    m = next((c for c in newname(n) if c in b), None)
    if not m: print('unmatched', n[:100]); continue
    la, lb = norm(a[n]), norm(b[m])
    oa, ob = ops(la), ops(lb)
    arith = lambda c: {k: v for k, v in c.items() if re.match(r'(fma|mul|add|sub|ex2|mma|cvt|neg|div|rcp|max|min|selp|setp)', k)}
    print(('SAME-TEXT ' if la == lb else ('SAME-ARITH-COUNTS ' if arith(oa) == arith(ob) else 'DIFFERENT ')) + n[30:110],
          len(la), len(lb))
    if arith(oa) != arith(ob):
        for k in sorted(set(arith(oa)) | set(arith(ob))):
            if oa.get(k, 0) != ob.get(k, 0): print('   ', k, oa.get(k, 0), ob.get(k, 0))
