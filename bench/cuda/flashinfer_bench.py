#!/usr/bin/env python3
"""bench/cuda/flashinfer_bench.py — FlashInfer's Hopper Gated DeltaNet prefill, checked and timed at linea's shapes.

FlashInfer (PyPI `flashinfer-python`, measured with 0.7.4) serves `chunk_gated_delta_rule` on sm_90 with CuTe DSL
kernels (gdn_kernels/delta_rule_dsl: `delta_rule_sm90`, and `delta_rule_cp_sm90` when batch x heads is under half
the SM count), JIT-compiled by nvidia-cutlass-dsl on first use. Inputs are packed varlen as FlashInfer takes them:
q, k, v [B*T, H, 128] bf16 with cu_seqlens; g the log decay in fp32 (`gate_domain="log"`) and beta in bf16, which
FlashInfer's wrapper turns into the fp32 alpha = exp(g) and fp32 beta its kernels read (two small elementwise
kernels per call, timed: `ms`); `native_operands_ms` passes those fp32 operands directly. k is L2-normalised.

1. Correctness: at CHECK shapes (default "2x1000 1x3000": a non-CP and a CP launch, lengths not multiples of 64)
   FlashInfer's output and final state against a float64 recurrence of the same rule (fla's convention).
2. Timing at SHAPES (default "8x4096 2x16384 1x32768"): CUDA events around REPS back-to-back calls after WARMUP
   calls (the first call JIT-compiles; its time is reported as first_call_s), median over ROUNDS, divided by REPS.

  PYTHONPATH=<site with flashinfer, nvidia_cutlass_dsl/dsl_packages, tvm_ffi> python3 bench/cuda/flashinfer_bench.py
One JSON object per line on stdout.
"""
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F

dev = "cuda"
H, D = 16, 128


def emit(**kw):
    print(json.dumps(kw), flush=True)


def inputs(B, T, seed=0):
    g = torch.Generator(device=dev).manual_seed(seed)
    r = lambda *s: torch.randn(*s, device=dev, generator=g)
    N = B * T
    x = dict(q=r(N, H, D).bfloat16(), k=F.normalize(r(N, H, D), dim=-1).bfloat16(), v=r(N, H, D).bfloat16(),
                g=F.logsigmoid(r(N, H)).float(), beta=torch.sigmoid(r(N, H)).bfloat16(),
                cu=torch.arange(0, N + 1, T, device=dev, dtype=torch.int64))
    x.update(alpha=x["g"].exp(), beta32=x["beta"].float())
    return x


def run(fi, x, native=False):
    """The log decay and bf16 beta as given (FlashInfer exponentiates g and widens beta per call), or, native, the
    operands its sm_90 kernels read: alpha = exp(g) and beta in fp32, made once outside the timing."""
    if native:
        return fi.chunk_gated_delta_rule(x["q"], x["k"], x["v"], g=x["alpha"], beta=x["beta32"], cu_seqlens=x["cu"],
                                         output_final_state=True)
    return fi.chunk_gated_delta_rule(x["q"], x["k"], x["v"], g=x["g"], beta=x["beta"], cu_seqlens=x["cu"],
                                     output_final_state=True, gate_domain="log")


def reference(x, B, T):
    """float64 recurrence: S <- exp(g) S; u = beta (v - S^T k); S <- S + k u^T; o = S^T q / sqrt(D)."""
    q, k, v = (x[n].double().view(B, T, H, D) for n in ("q", "k", "v"))
    a, b = x["g"].double().exp().view(B, T, H), x["beta"].double().view(B, T, H)
    S = torch.zeros(B, H, D, D, device=dev, dtype=torch.float64)  # [key, value]
    o = torch.empty(B, T, H, D, device=dev, dtype=torch.float64)
    for t in range(T):
        S = S * a[:, t, :, None, None]
        u = b[:, t, :, None] * (v[:, t] - torch.einsum("bhkv,bhk->bhv", S, k[:, t]))
        S = S + k[:, t, :, :, None] * u[:, :, None, :]
        o[:, t] = torch.einsum("bhkv,bhk->bhv", S, q[:, t]) * D ** -0.5
    return o.reshape(B * T, H, D), S


def rel(a, b):
    return ((a.double() - b).norm() / b.norm()).item()


def check(fi, B, T):
    x = inputs(B, T, seed=1)
    o, state = run(fi, x)
    torch.cuda.synchronize()
    o_ref, s_ref = reference(x, B, T)
    # FlashInfer's state is [seq, head, V, K] (its docs); compare both orientations and report which matched.
    s_kv, s_vk = rel(state, s_ref), rel(state.transpose(-1, -2), s_ref)
    emit(kind="check", impl="flashinfer", B=B, T=T, H=H, K=D, V=D, out_rel_err=round(rel(o, o_ref), 6),
         state_rel_err=round(min(s_kv, s_vk), 6), state_layout="KV" if s_kv <= s_vk else "VK",
         out_finite=bool(torch.isfinite(o).all()))


def timed(fn, warmup, reps, rounds):
    """Median over rounds of (CUDA-event time of reps back-to-back calls) / reps, and of single synchronised calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    batched, single = [], []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        batched.append(start.elapsed_time(end) / reps)
    for _ in range(rounds * 2):  # what a caller that synchronises each call sees (host overhead included)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
        end.synchronize()
        single.append(start.elapsed_time(end))
    return round(statistics.median(batched), 4), round(min(batched), 4), round(statistics.median(single), 4)


def bench(fi, B, T, warmup, reps, rounds):
    x = inputs(B, T)
    t0 = time.time()
    run(fi, x)
    torch.cuda.synchronize()
    compile_s = time.time() - t0
    ms, ms_min, single = timed(lambda: run(fi, x), warmup, reps, rounds)
    native, _, _ = timed(lambda: run(fi, x, native=True), warmup, reps, rounds)
    emit(kind="prefill", impl="flashinfer", rule="gated_delta_rule", B=B, T=T, H=H, K=D, V=D,
         cp=bool(B * H * 2 < torch.cuda.get_device_properties(0).multi_processor_count),
         ms=ms, ms_min=ms_min, single_call_ms=single, native_operands_ms=native, first_call_s=round(compile_s, 1))


def main():
    import importlib.metadata as md
    t0 = time.time()
    import flashinfer.gdn_prefill as fi
    import_s = time.time() - t0
    versions = {}
    for p in ("flashinfer-python", "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-base", "apache-tvm-ffi",
              "cuda-bindings"):
        try:
            versions[p] = md.version(p)
        except md.PackageNotFoundError:
            versions[p] = None
    emit(kind="env", device=torch.cuda.get_device_name(0), capability=list(torch.cuda.get_device_capability(0)),
         sms=torch.cuda.get_device_properties(0).multi_processor_count, torch=torch.__version__,
         import_s=round(import_s, 1), **versions)
    parse = lambda s: [tuple(int(n) for n in e.split("x")) for e in s.split()]
    warmup, reps, rounds = (int(os.environ.get(n, d)) for n, d in (("WARMUP", 3), ("REPS", 20), ("ROUNDS", 5)))
    for B, T in parse(os.environ.get("CHECK", "2x1000 1x3000")):
        try:
            check(fi, B, T)
        except Exception as e:  # report and go on: the timings still say something
            emit(kind="check", impl="flashinfer", B=B, T=T, error=f"{type(e).__name__}: {e}"[:600])
    for B, T in parse(os.environ.get("SHAPES", "8x4096 2x16384 1x32768")):
        try:
            bench(fi, B, T, warmup, reps, rounds)
        except Exception as e:
            emit(kind="prefill", impl="flashinfer", B=B, T=T, error=f"{type(e).__name__}: {e}"[:600])
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
