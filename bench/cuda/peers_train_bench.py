#!/usr/bin/env python3
"""bench/cuda/peers_train_bench.py — the peers' forward + backward, timed at linea's training shapes in one run.

For each shape (B, T) in SHAPES (default "8x4096 1x32768"), H=16, K=V=128, bf16 inputs (g, gk in fp32 as
FlashQLA asks; fla casts), output_final_state=True: per rule, fla's Triton `chunk_*` forward alone and forward +
backward (torch.autograd.backward through o and the final state with fixed dL/do, dL/dS_T), and for Gated
DeltaNet FlashQLA's `chunk_gated_delta_rule` (what fla users get by default on Hopper) the same way.
fla is forced onto its Triton path: FLA_FLASH_QLA=0 FLA_FLASH_KDA=0 FLA_TILELANG=0. A peer that refuses or fails
is reported with its error. Times: triton.testing.do_bench, median (ms). One JSON object per line.

  python3 bench/cuda/peers_train_bench.py            # PEERS="fla flashqla" SHAPES="8x4096 1x32768" RULES=...
"""
import json
import os
import sys

for var in ("FLA_FLASH_QLA", "FLA_FLASH_KDA", "FLA_TILELANG"):
    os.environ.setdefault(var, "0")

import torch
import torch.nn.functional as F
import triton

dev = "cuda"
H, K, V = 16, 128, 128


def emit(**kw):
    print(json.dumps(kw), flush=True)


def ms(fn, grads=None):
    return triton.testing.do_bench(fn, warmup=10, rep=200, return_mode="median", grad_to_none=grads)


def inputs(B, T):
    g = torch.Generator(device=dev).manual_seed(0)
    r = lambda *s: torch.randn(*s, device=dev, generator=g)
    x = dict(q=r(B, T, H, K).bfloat16(), k=F.normalize(r(B, T, H, K), dim=-1).bfloat16(), v=r(B, T, H, V).bfloat16(),
             g=F.logsigmoid(r(B, T, H)).float(), gk=F.logsigmoid(r(B, T, H, K)).float(),
             beta=torch.sigmoid(r(B, T, H)).bfloat16(), b=torch.sigmoid(r(B, T, H, K)).bfloat16(),
             w=torch.sigmoid(r(B, T, H, V)).bfloat16())
    for t in x.values():
        t.requires_grad_(True)
    do = r(B, T, H, V).bfloat16()
    dht = r(B, H, K, V)
    return x, do, dht


def time_op(impl, rule, shape, fn, x, do, dht, version):
    B, T = shape
    base = dict(kind="train", rule=rule, impl=impl, B=B, T=T, version=version)
    try:
        with torch.no_grad():
            fwd = ms(fn)
        def step():
            o, ht = fn()
            torch.autograd.backward([o, ht], [do, dht])
        step()  # JIT / autotune before timing
        both = ms(step, grads=list(x.values()))
        emit(**base, fwd_ms=round(fwd, 4), fwd_bwd_ms=round(both, 4), bwd_ms=round(both - fwd, 4))
    except Exception as e:  # a peer that refuses is reported; the others still run
        emit(**base, error=f"{type(e).__name__}: {e}"[:400])
    torch.cuda.empty_cache()


def main():
    peers = os.environ.get("PEERS", "fla flashqla").split()
    shapes = [tuple(int(n) for n in s.split("x")) for s in os.environ.get("SHAPES", "8x4096 1x32768").split()]
    only = os.environ.get("RULES", "").split()
    for shape in shapes:
        x, do, dht = inputs(*shape)
        q, k, v, g, gk, beta, b, w = (x[n] for n in ("q", "k", "v", "g", "gk", "beta", "b", "w"))
        if "fla" in peers:
            import fla
            from fla.ops.delta_rule import chunk_delta_rule
            from fla.ops.gated_delta_rule import chunk_gated_delta_rule
            from fla.ops.gdn2 import chunk_gdn2
            from fla.ops.gla import chunk_gla
            from fla.ops.kda import chunk_kda
            from fla.ops.linear_attn import chunk_linear_attn
            from fla.ops.simple_gla import chunk_simple_gla
            ops = {
                "additive": lambda: chunk_linear_attn(q, k, v, output_final_state=True, normalize=False),
                "simple_gla": lambda: chunk_simple_gla(q, k, v, g=g, output_final_state=True),
                "gla": lambda: chunk_gla(q, k, v, g=gk, output_final_state=True),
                "delta": lambda: chunk_delta_rule(q, k, v, beta, output_final_state=True),
                "gated_delta": lambda: chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True),
                "kda": lambda: chunk_kda(q, k, v, gk, beta, output_final_state=True),
                "gdn2": lambda: chunk_gdn2(q, k, v, gk, b, w, output_final_state=True),
            }
            for rule, fn in ops.items():
                if not only or rule in only:
                    time_op("fla", rule, shape, fn, x, do, dht, fla.__version__)
        if "flashqla" in peers and (not only or "gated_delta" in only):
            try:
                import flash_qla
                fn = lambda: flash_qla.chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True)
                time_op("flashqla", "gated_delta", shape, fn, x, do, dht, flash_qla.__version__)
            except Exception as e:
                emit(kind="train", rule="gated_delta", impl="flashqla", B=shape[0], T=shape[1],
                     error=f"{type(e).__name__}: {e}"[:400])
        del x, do, dht
        torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
