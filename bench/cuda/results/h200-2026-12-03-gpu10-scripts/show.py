import json, sys
keep = ('rule','read','V','qk_l2norm','B','T','ms','copy_frac','fwd_ms','bwd_ms','bwd_over_fwd','indices','variant','tokens','segment_tokens','pieces','piece','ratio','identity_ms','ccq_ms')
for l in open(sys.argv[1]):
    try: r = json.loads(l)
    except Exception: continue
    if len(sys.argv) > 2 and sys.argv[2] not in l: continue
    print(' '.join(f'{k}={r[k]}' for k in ('kind',) + keep if k in r))
