# worst relative error per (rule, input type) in a LINEA_BACKWARD_ERRORS=1 suite log: python3 worst.py tests.log
import re, sys, collections
w = collections.defaultdict(lambda: (0.0, ''))
for line in open(sys.argv[1], errors='replace'):
    m = re.match(r'(\S+) (float32|bf16|fp16) \[(.*)\] (\S+) ([0-9.e+-]+)$', line.strip())
    if not m: continue
    rule, ty, shape, name, v = m.groups(); v = float(v)
    if v > w[(rule, ty)][0]: w[(rule, ty)] = (v, f'{name} [{shape}]')
for (rule, ty), (v, where) in sorted(w.items()):
    if rule in ('kda', 'gdn2', 'gla'): print(f'{rule:5} {ty:8} {v:.3e}  {where}')
