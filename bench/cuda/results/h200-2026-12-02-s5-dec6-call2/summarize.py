#!/usr/bin/env python3
# decode_ab's JSON lines -> min-max of copy_frac per (rule, variant, indices) over the rounds, one table per mode.
import json, sys
from collections import defaultdict
rows, copies = defaultdict(list), []
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith('{'): continue
    r = json.loads(line)
    if r['kind'] == 'round': copies.append(r['copy_tbps'])
    if r['kind'] == 'decode_ab': rows[(r['indices'], r['rule'], r['variant'])].append(r['copy_frac'])
print('copy TB/s per round:', copies)
modes = ['none', 'device_in_order', 'device', 'device_pool4']
variants = [v for v in ['main', 'heads', 'pool', 'rows_default_cache', 'pool_default_cache', 'whole', 'pool_whole'] if any(k[2] == v for k in rows)]
rules = []
for (m, ru, v) in rows:
    if ru not in rules: rules.append(ru)
def mm(x): return f'{min(x):.3f}' if min(x) == max(x) else f'{min(x):.3f}-{max(x):.3f}'
for m in modes:
    print(f'\n## indices: {m}')
    print('| rule | ' + ' | '.join(variants) + ' |')
    for ru in rules:
        print(f'| {ru} | ' + ' | '.join(mm(rows[(m, ru, v)]) if rows[(m, ru, v)] else '' for v in variants) + ' |')
