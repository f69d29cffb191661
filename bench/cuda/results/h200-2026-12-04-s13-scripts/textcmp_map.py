# textcmp with renamed kernels: the new template parameter (PerKey / Inter, = false) appended to a kernel's
# template arguments changes its mangled name; map old names to new ones by inserting "Lb0E" before the closing "EE".
import sys, importlib.util, re
spec = importlib.util.spec_from_file_location("tc", "/work/main/bench/results/ci-time-2026-12-03-ci14/textcmp.py")
src = open("/work/main/bench/results/ci-time-2026-12-03-ci14/textcmp.py").read()
src = src[:src.index("a,b=texts(")]  # the functions only
ns = {}
exec(src, ns)
a, b = ns['texts'](sys.argv[1]), ns['texts'](sys.argv[2])
ta = {n: v for n, v in a.items() if n.startswith('.text.')}
tb = {n: v for n, v in b.items() if n.startswith('.text.')}
same = diff = 0
unmatched = []
for n, v in ta.items():
    cands = [n] + [n[:i + 1] + 'Lb0E' + n[i + 1:] for i in [m.start() for m in re.finditer('EEEv', n)]]
    m = next((c for c in cands if c in tb), None)
    if m is None:
        unmatched.append(n); continue
    if set(v) == set(tb[m]): same += 1
    else: diff += 1; print('DIFF', n[:150])
print('old kernels', len(ta), 'new kernels', len(tb), 'matched identical', same, 'differ', diff)
for n in unmatched: print('unmatched old', n[:150])
