"""What the Python call adds over the C++ call (issue #16: <= 10 µs), and the torch CUDA path against the kernel.

    PYTHONPATH=python python3 bench/python_overhead.py            # CPU (numpy, torch) and, with a GPU, CUDA

For each case the same forward is timed three ways, in one process, on the same arrays:
  kernel   the C++ call alone: the extension runs the kernel `repeat` times inside one call (options.repeat), so
           the binding's work is paid once and divided away
  binding  linea._linea.forward with prebuilt arrays and options: the kernel plus the binding's argument work
  python   the public function (linea.fused_recurrent_* / linea.chunk_*): everything a user pays
and `python - kernel` is the overhead. CPU times are min-of-5 timeit means; CUDA ones time `n` calls then one
synchronisation (host-bound at these shapes: launch cost included in every column). One CPU thread, so the
thread pool's start-up is not in the numbers. Prints a Markdown table (bench/README.md has the last one).
"""
from __future__ import annotations

import argparse
import timeit

import numpy as np

import linea
from linea import _core, _linea

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def inputs(B, T, H, K, V, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, T, H, K), np.float32)
    k = rng.standard_normal((B, T, H, K), np.float32)
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v = rng.standard_normal((B, T, H, V), np.float32)
    g = (-np.logaddexp(0, -rng.standard_normal((B, T, H))) / 4).astype(np.float32)
    beta = (1 / (1 + np.exp(-rng.standard_normal((B, T, H))))).astype(np.float32)
    return dict(q=q, k=k, v=v, g=g, beta=beta)


def timed(f, n, sync=None):
    f()
    if sync:
        sync()

    def run():
        for _ in range(n):
            f()
        if sync:
            sync()

    return min(timeit.repeat(run, number=1, repeat=5)) / n * 1e6


def case(label, kind, x, form, n, pool=None):
    """One row: (label, kind, kernel µs, binding µs, python µs)."""
    B, T, H, K = x["q"].shape
    V = x["v"].shape[3]
    cuda = kind == "torch-cuda"
    if kind != "numpy":
        dev = "cuda" if cuda else "cpu"
        x = {k: torch.from_numpy(a).to(dev) for k, a in x.items()}
        pool = None if pool is None else {k: (torch.from_numpy(a).to(dev) if a is not None else None)
                                          for k, a in pool.items()}
    sync = torch.cuda.synchronize if cuda else None
    empty = (lambda s: torch.empty(s, device=x["q"].device)) if kind != "numpy" else \
        (lambda s: np.empty(s, np.float32))
    arrays = dict(x, o=empty((B, T, H, V)))
    if pool is not None:  # the decode step over a pool, updated in place
        arrays.update(initial_state=pool["pool"], final_state=pool["pool"], state_indices=pool["idx"])
        f = lambda: linea.fused_recurrent_gated_delta_rule(  # noqa: E731
            x["q"], x["k"], x["v"], g=x["g"], beta=x["beta"], initial_state=pool["pool"],
            ssm_state_indices=pool["idx"])
        opts = _core.Options(form="step")
    else:
        f = lambda: linea.chunk_gated_delta_rule(x["q"], x["k"], x["v"], x["g"], x["beta"])  # noqa: E731
        opts = _core.Options(form=form)
    backend = "cuda" if cuda else "cpu"
    stream = _core.A.stream_of(x["q"]) if cuda else 0
    native = opts.native(backend, "float32", stream)
    binding = lambda: _linea.forward("gated_delta_rule", arrays, native)  # noqa: E731
    t_bind = timed(binding, n, sync)
    native.repeat = n
    t_kernel = timed(binding, 1, sync) / n  # one call, n kernels
    native.repeat = 1
    t_py = timed(f, n, sync)
    return label, kind, t_kernel, t_bind, t_py


def large(rule="gated_delta_rule", B=8, T=4096, H=16, K=128, V=128, reps=20):
    """The torch CUDA path against the kernel at bench/cuda's shape (bf16, chunkwise): CUDA events, median."""
    dev, dt = "cuda", torch.bfloat16
    x = {k: torch.from_numpy(a).to(dev, dt) for k, a in inputs(B, T, H, K, V).items()}
    f = lambda: linea.chunk_gated_delta_rule(x["q"], x["k"], x["v"], x["g"], x["beta"])  # noqa: E731
    arrays = dict(x, o=torch.empty(B, T, H, V, device=dev, dtype=dt))
    native = _core.Options(form="chunkwise").native("cuda", "bfloat16", _core.A.stream_of(x["q"]))

    def median_ms(g, per_call=1):
        times = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / per_call)
        return sorted(times)[len(times) // 2]

    with torch.no_grad():
        f(), torch.cuda.synchronize()
        t_py = median_ms(f)
        native.repeat = 10
        t_kernel = median_ms(lambda: _linea.forward(rule, arrays, native), 10)
        native.repeat = 1
    print(f"\n{rule} chunk, B={B} T={T} H={H} K=V={K} bf16: linea.chunk_{rule} (torch CUDA) {t_py:.3f} ms, "
          f"kernel alone (C++ loop) {t_kernel:.3f} ms, ratio {t_py / t_kernel:.3f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=2000, help="calls per timing")
    p.add_argument("--large", action="store_true", help="also the 8x4096 CUDA comparison")
    args = p.parse_args()
    linea.set_num_threads(1)
    rows = []
    kinds = ["numpy"] + (["torch-cpu"] if torch is not None else [])
    if torch is not None and torch.cuda.is_available() and _linea.has_cuda:
        kinds.append("torch-cuda")
    for kind in kinds:
        H, K, V = 4, 64, 64
        step = inputs(1, 1, H, K, V)
        pool = {"pool": np.zeros((8, H, K, V), np.float32), "idx": np.array([3], np.int32)}
        rows.append(case("decode step, B=1, H=4, K=V=64", kind, step, "step", args.n, pool))
        rows.append(case("chunk, B=1, T=64, H=4, K=V=64", kind, inputs(1, 64, H, K, V), "chunkwise", args.n // 10))
    print("| call | arrays | kernel (C++ loop) µs | _linea.forward µs | linea.* µs | Python adds µs |")
    print("|---|---|---|---|---|---|")
    for label, kind, tk, tb, tp in rows:
        print(f"| {label} | {kind} | {tk:.1f} | {tb:.1f} | {tp:.1f} | {tp - tk:.1f} |")
    if args.large and "torch-cuda" in kinds:
        large()


if __name__ == "__main__":
    main()
