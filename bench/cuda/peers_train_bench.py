#!/usr/bin/env python3
"""bench/cuda/peers_train_bench.py — the peers' forward + backward, timed at linea's training shapes in one run.

For each shape (B, T) in SHAPES (default "8x4096 1x32768"), H=16, K=V=128, bf16 inputs (g, gk in fp32 as
FlashQLA asks; fla casts), output_final_state=True: per rule, fla's Triton `chunk_*` forward alone and forward +
backward (torch.autograd.backward through o and the final state with fixed dL/do, dL/dS_T), and for Gated
DeltaNet FlashQLA's `chunk_gated_delta_rule` (what fla users get by default on Hopper) the same way.
fla is forced onto its Triton path (FLA_FLASH_QLA=0 FLA_FLASH_KDA=0 FLA_TILELANG=0) unless FLA_DEFAULTS=1, which
leaves fla's own choice of backends (with tilelang and FlashQLA importable: its TileLang chunk_bwd_dqkwg on
Hopper, FlashQLA for Gated DeltaNet); those rows are impl "fla-default". A peer that refuses or fails is reported
with its error. Times: triton.testing.do_bench, median (ms). One JSON object per line, emitted as each shape ends.

Rules take linea's names (linear_attn simple_gla gla delta_rule gated_delta_rule kda gdn2; additive, delta and
gated_delta are accepted too). Each row also says what the first call cost (first_fwd_s, first_step_s: Triton's
compile and autotuning, FlashQLA's tilelang JIT) and, for fla, how many autotuning configurations were run
(autotune_configs, autotune_s).

Shapes: FLA_SHAPES (default "8x4096 1x32768") for fla, FQ_SHAPES (default "8x4096 2x16384 1x32768") for FlashQLA,
or SHAPES for both; the shapes are taken in the order they first appear (FLA_SHAPES, then FQ_SHAPES), FlashQLA
first at each. OP_CAP=s bounds
each (peer, rule, shape) by an alarm (a row with the error "timeout ..." and the next one starts); PEERS_SKIP lists
"impl:rule:BxT" to leave out and PEERS_PROGRESS names a file that gets a line as each one begins, so that a driver
can restart a process that died after what it finished (bench/cuda/peers_call.sh).

PEERS_WARM=1 only compiles: one forward + backward per shape, each Triton autotuning configuration run once instead
of benchmarked, and fla's on-disk autotuning cache off (FLA_CACHE_RESULTS=0), so that processes run side by side
fill Triton's and tilelang's kernel caches without leaving an autotuning choice made on a shared GPU. The timing
run after it then autotunes on an idle GPU with every kernel already compiled. Rows: kind "warm".

  python3 bench/cuda/peers_train_bench.py            # PEERS="fla flashqla" SHAPES="8x4096 1x32768" RULES=...
"""
import json
import os
import signal
import sys
import time

WARM = os.environ.get("PEERS_WARM") == "1"
FLA_DEFAULTS = os.environ.get("FLA_DEFAULTS") == "1"
if not FLA_DEFAULTS:
    for var in ("FLA_FLASH_QLA", "FLA_FLASH_KDA", "FLA_TILELANG"):
        os.environ.setdefault(var, "0")
if WARM:
    os.environ["FLA_CACHE_RESULTS"] = "0"  # read when fla is imported: no autotuning choice persisted from here

import torch
import torch.nn.functional as F
import triton
from triton.runtime.autotuner import Autotuner

dev = "cuda"
H, K, V = 16, 128, 128
ALIASES = {"additive": "linear_attn", "delta": "delta_rule", "gated_delta": "gated_delta_rule"}
TUNE = {"configs": 0, "seconds": 0.0}
OP_CAP = int(os.environ.get("OP_CAP", "0"))  # 0: no alarm
SKIP = set(os.environ.get("PEERS_SKIP", "").split())
PROGRESS = os.environ.get("PEERS_PROGRESS")


def count_autotuning():
    """Count the configurations Triton's autotuner runs (and the seconds, compiles included) in this process; in
    warm mode, run each one once rather than benchmark it."""
    bench = Autotuner._bench

    def counted(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return bench(self, *args, **kwargs)
        finally:
            TUNE["configs"] += 1
            TUNE["seconds"] += time.perf_counter() - t0

    Autotuner._bench = counted
    if WARM:
        def once(kernel_call, quantiles=None, **_):
            kernel_call()
            torch.cuda.synchronize()
            return [1.0, 1.0, 1.0] if quantiles else 1.0
        # a property with a setter: whether Triton's Autotuner assigns do_bench itself or not
        Autotuner.do_bench = property(lambda self: once, lambda self, value: None)


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


def seconds(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return round(time.perf_counter() - t0, 2)


class OpTimeout(BaseException):  # not an Exception: no `except Exception` inside a peer swallows it
    pass


def on_alarm(signum, frame):
    raise OpTimeout()


def time_op(impl, rule, shape, fn, x, do, dht, version):
    B, T = shape
    tag = f"{impl}:{rule}:{B}x{T}"
    if tag in SKIP:
        return
    if PROGRESS:
        with open(PROGRESS, "a") as f:
            f.write(tag + "\n")
    base = dict(kind="warm" if WARM else "train", rule=rule, impl=impl, B=B, T=T, H=H, K=K, V=V, version=version)
    tune0 = dict(TUNE)
    def step():
        o, ht = fn()
        torch.autograd.backward([o, ht], [do, dht])
    t0 = time.perf_counter()
    signal.alarm(OP_CAP)
    try:
        with torch.no_grad():
            first_fwd = seconds(fn)  # compile / JIT / autotune of the forward kernels
        first_step = seconds(step)  # ... and of the backward kernels
        stats = dict(first_fwd_s=first_fwd, first_step_s=first_step, autotune_configs=TUNE["configs"] - tune0["configs"],
                     autotune_s=round(TUNE["seconds"] - tune0["seconds"], 2))
        if WARM:
            emit(**base, **stats)
        else:
            with torch.no_grad():
                fwd = ms(fn)
            both = ms(step, grads=list(x.values()))
            signal.alarm(0)
            emit(**base, fwd_ms=round(fwd, 4), fwd_bwd_ms=round(both, 4), bwd_ms=round(both - fwd, 4), **stats,
                 op_s=round(time.perf_counter() - t0, 1))
    except OpTimeout:
        emit(**base, error=f"timeout after OP_CAP={OP_CAP} s (compile, autotuning and timing of this one)",
             autotune_configs=TUNE["configs"] - tune0["configs"], autotune_s=round(TUNE["seconds"] - tune0["seconds"], 2))
    except Exception as e:  # a peer that refuses is reported; the others still run
        emit(**base, error=f"{type(e).__name__}: {e}"[:400], op_s=round(time.perf_counter() - t0, 1))
    finally:
        signal.alarm(0)
    for t in x.values():
        t.grad = None
    torch.cuda.empty_cache()


def fla_ops(x):
    from fla.ops.delta_rule import chunk_delta_rule
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    from fla.ops.gdn2 import chunk_gdn2
    from fla.ops.gla import chunk_gla
    from fla.ops.kda import chunk_kda
    from fla.ops.linear_attn import chunk_linear_attn
    from fla.ops.simple_gla import chunk_simple_gla
    q, k, v, g, gk, beta, b, w = (x[n] for n in ("q", "k", "v", "g", "gk", "beta", "b", "w"))
    return {
        "linear_attn": lambda: chunk_linear_attn(q, k, v, output_final_state=True, normalize=False),
        "simple_gla": lambda: chunk_simple_gla(q, k, v, g=g, output_final_state=True),
        "gla": lambda: chunk_gla(q, k, v, g=gk, output_final_state=True),
        "delta_rule": lambda: chunk_delta_rule(q, k, v, beta, output_final_state=True),
        "gated_delta_rule": lambda: chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True),
        "kda": lambda: chunk_kda(q, k, v, gk, beta, output_final_state=True),
        "gdn2": lambda: chunk_gdn2(q, k, v, gk, b, w, output_final_state=True),
    }


def main():
    count_autotuning()
    signal.signal(signal.SIGALRM, on_alarm)
    peers = os.environ.get("PEERS", "fla flashqla").split()
    parse = lambda v: [tuple(int(n) for n in e.split("x")) for e in v.split()]
    fla_shapes = parse(os.environ.get("SHAPES") or os.environ.get("FLA_SHAPES", "8x4096 1x32768"))
    fq_shapes = parse(os.environ.get("SHAPES") or os.environ.get("FQ_SHAPES", "8x4096 2x16384 1x32768"))
    shapes = list(dict.fromkeys(fla_shapes + fq_shapes))
    only = [ALIASES.get(r, r) for r in os.environ.get("RULES", "").split()]
    fla_impl = "fla-default" if FLA_DEFAULTS else "fla"
    for shape in shapes:
        x, do, dht = inputs(*shape)
        if "flashqla" in peers and shape in fq_shapes and (not only or "gated_delta_rule" in only):
            try:
                import flash_qla
                q, k, v, g, beta = (x[n] for n in ("q", "k", "v", "g", "beta"))
                fn = lambda: flash_qla.chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True)
                time_op("flashqla", "gated_delta_rule", shape, fn, x, do, dht, flash_qla.__version__)
            except Exception as e:
                emit(kind="train", rule="gated_delta_rule", impl="flashqla", B=shape[0], T=shape[1],
                     error=f"{type(e).__name__}: {e}"[:400])
        if "fla" in peers and shape in fla_shapes:
            try:
                import fla
                ops = fla_ops(x)
            except Exception as e:  # an import that fails is one row
                emit(kind="train", impl=fla_impl, B=shape[0], T=shape[1], error=f"{type(e).__name__}: {e}"[:400])
                ops = {}
            for rule in (only or list(ops)):
                if rule in ops:
                    time_op(fla_impl, rule, shape, ops[rule], x, do, dht, fla.__version__)
        del x, do, dht
        torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
