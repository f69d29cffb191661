#!/usr/bin/env python3
"""bench/cuda/fla_long_bench.py — fla's Triton chunk kernels at the long-sequence shapes of segments_bench.cu.

H=16, K=V=128, bf16, output_final_state: 8x4096, 2x16384, 1x32768 and one 32768 plus 63 x 512 packed
(cu_seqlens). One JSON object per line. FLA_FLASH_QLA=0 FLA_FLASH_KDA=0 FLA_TILELANG=0 force the Triton path.
FLA_LONG_RULES (space separated) and FLA_LONG_SHAPES narrow the run; each rule's first call at a shape compiles
(Triton), so the slowest rules come last.
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


def ms(fn):
    return triton.testing.do_bench(fn, warmup=10, rep=100, return_mode="median")


def main():
    import fla
    from fla.ops.delta_rule import chunk_delta_rule
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    from fla.ops.gla import chunk_gla
    from fla.ops.kda import chunk_kda
    from fla.ops.simple_gla import chunk_simple_gla

    rules = os.environ.get("FLA_LONG_RULES", "gated_delta_rule delta_rule simple_gla gla kda").split()
    shapes = os.environ.get("FLA_LONG_SHAPES", "1x32768 varlen 2x16384 8x4096").split()
    g = torch.Generator(device=dev).manual_seed(0)
    n = 32768 + 63 * 512
    r = lambda *s: torch.randn(*s, device=dev, generator=g)
    q0, k0, v0 = r(1, n, H, K).bfloat16(), F.normalize(r(1, n, H, K), dim=-1).bfloat16(), r(1, n, H, V).bfloat16()
    g0, gk0, beta0 = F.logsigmoid(r(1, n, H)).bfloat16(), F.logsigmoid(r(1, n, H, K)).bfloat16(), torch.sigmoid(r(1, n, H)).bfloat16()
    for shape in shapes:
        cu = None
        if shape == "varlen":
            B, T = 1, n
            cu = torch.tensor([0, 32768] + [32768 + 512 * i for i in range(1, 64)], device=dev, dtype=torch.long)
        else:
            B, T = (int(x) for x in shape.split("x"))
        view = lambda x: x[:, : B * T].reshape(B, T, *x.shape[2:]).contiguous()
        q, k, v, gg, gk, beta = (view(x) for x in (q0, k0, v0, g0, gk0, beta0))
        ops = {
            "simple_gla": lambda: chunk_simple_gla(q, k, v, g=gg, output_final_state=True, cu_seqlens=cu),
            "delta_rule": lambda: chunk_delta_rule(q, k, v, beta, output_final_state=True, cu_seqlens=cu),
            "gated_delta_rule": lambda: chunk_gated_delta_rule(q, k, v, gg, beta, output_final_state=True, cu_seqlens=cu),
            "gla": lambda: chunk_gla(q, k, v, g=gk, output_final_state=True, cu_seqlens=cu),
            "kda": lambda: chunk_kda(q, k, v, gk, beta, output_final_state=True, cu_seqlens=cu),
        }
        with torch.inference_mode():
            for name in rules:
                try:
                    t = ms(ops[name])
                    print(json.dumps(dict(kind="long", rule=name, shape=shape if shape != "varlen" else "32768+63x512",
                                          impl="fla", ms=round(t, 4), ns_per_token=round(t * 1e6 / (B * T), 3),
                                          fla=fla.__version__)), flush=True)
                except Exception as e:
                    print(json.dumps(dict(kind="long", rule=name, shape=shape, impl="fla",
                                          error=f"{type(e).__name__}: {e}"[:300])), flush=True)


if __name__ == "__main__":
    sys.exit(main())
