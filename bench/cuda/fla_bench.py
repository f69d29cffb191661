#!/usr/bin/env python3
"""bench/cuda/fla_bench.py — fla's Triton kernels timed at the shapes of bench_cuda.cu, in the same run.

Prints one JSON object per line: the device's copy bandwidth and bf16 matrix rate (torch), then every chunk
forward (B=8, T=4096, H=16, K=V=128, bf16, output_final_state) and the Gated DeltaNet decode step (B=256,
fp32 state). Force fla's Triton path: FLA_FLASH_QLA=0 FLA_FLASH_KDA=0 FLA_TILELANG=0 (run_gpu.sh sets them).
Times: triton.testing.do_bench, median, under torch.inference_mode (forward only).
"""
import json
import os
import sys

import torch
import torch.nn.functional as F
import triton

for var in ("FLA_FLASH_QLA", "FLA_FLASH_KDA", "FLA_TILELANG"):
    os.environ.setdefault(var, "0")

dev = "cuda"
B, T, H, K, V = 8, 4096, 16, 128, 128


def emit(**kw):
    print(json.dumps(kw), flush=True)


def ms(fn):
    return triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median")


def device_ceilings():
    n = 1 << 31
    a = torch.empty(n, dtype=torch.uint8, device=dev).fill_(1)
    b = torch.empty_like(a)
    t = ms(lambda: b.copy_(a))
    copy = 2 * n / (t * 1e-3) / 1e12
    x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    y = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    t = ms(lambda: x @ y)
    emit(kind="device", name=torch.cuda.get_device_name(), copy_tbps=round(copy, 3),
         bf16_tflops=round(2 * 8192**3 / (t * 1e-3) / 1e12, 1), torch=torch.__version__, triton=triton.__version__)


def inputs():
    g = torch.Generator(device=dev).manual_seed(0)
    r = lambda *s: torch.randn(*s, device=dev, generator=g)
    x = dict(q=r(B, T, H, K).bfloat16(), k=F.normalize(r(B, T, H, K), dim=-1).bfloat16(), v=r(B, T, H, V).bfloat16(),
             g=F.logsigmoid(r(B, T, H)).bfloat16(), gk=F.logsigmoid(r(B, T, H, K)).bfloat16(),
             beta=torch.sigmoid(r(B, T, H)).bfloat16(), b=torch.sigmoid(r(B, T, H, K)).bfloat16(),
             w=torch.sigmoid(r(B, T, H, V)).bfloat16())
    return x


def main():
    import fla
    from fla.ops.delta_rule import chunk_delta_rule
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
    from fla.ops.gdn2 import chunk_gdn2
    from fla.ops.gla import chunk_gla
    from fla.ops.kda import chunk_kda
    from fla.ops.linear_attn import chunk_linear_attn
    from fla.ops.simple_gla import chunk_simple_gla

    if not os.environ.get("FLA_ONLY"):
        device_ceilings()
    x = inputs()
    q, k, v, g, gk, beta, b, w = (x[n] for n in ("q", "k", "v", "g", "gk", "beta", "b", "w"))
    ops = {
        "linear_attn": lambda: chunk_linear_attn(q, k, v, output_final_state=True, normalize=False),
        "simple_gla": lambda: chunk_simple_gla(q, k, v, g=g, output_final_state=True),
        "gla": lambda: chunk_gla(q, k, v, g=gk, output_final_state=True),
        "delta_rule": lambda: chunk_delta_rule(q, k, v, beta, output_final_state=True),
        "gated_delta_rule": lambda: chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True),
        "kda": lambda: chunk_kda(q, k, v, gk, beta, output_final_state=True),
        "gdn2": lambda: chunk_gdn2(q, k, v, gk, b, w, output_final_state=True),
    }
    only = os.environ.get("FLA_ONLY", "").split()  # e.g. FLA_ONLY="kda gdn2 decode"
    with torch.inference_mode():
        for name, fn in ops.items():
            if only and name not in only:
                continue
            try:
                emit(kind="chunkwise", rule=name, impl="fla", ms=round(ms(fn), 4), fla=fla.__version__)
            except Exception as e:  # an op that fails is reported, the others still run
                emit(kind="chunkwise", rule=name, impl="fla", error=f"{type(e).__name__}: {e}"[:300])
        if only and "decode" not in only:
            return
        Bd = 256
        r = torch.Generator(device=dev).manual_seed(1)
        qd = torch.randn(Bd, 1, H, K, device=dev, generator=r).bfloat16()
        kd = F.normalize(torch.randn(Bd, 1, H, K, device=dev, generator=r), dim=-1).bfloat16()
        vd = torch.randn(Bd, 1, H, V, device=dev, generator=r).bfloat16()
        gd = F.logsigmoid(torch.randn(Bd, 1, H, device=dev, generator=r)).bfloat16()
        bd = torch.sigmoid(torch.randn(Bd, 1, H, device=dev, generator=r)).bfloat16()
        h0 = torch.randn(Bd, H, K, V, device=dev, generator=r)
        try:
            t = ms(lambda: fused_recurrent_gated_delta_rule(qd, kd, vd, gd, beta=bd, initial_state=h0,
                                                            output_final_state=True))
            emit(kind="decode", rule="gated_delta_rule", impl="fla", ms=round(t, 4),
                 tbps=round(2 * h0.numel() * 4 / (t * 1e-3) / 1e12, 3))
        except Exception as e:
            emit(kind="decode", rule="gated_delta_rule", impl="fla", error=f"{type(e).__name__}: {e}"[:300])


if __name__ == "__main__":
    sys.exit(main())
