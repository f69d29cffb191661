"""What the Python call adds over the C++ call (issue #16: <= 10 µs), and the torch CUDA path against the kernel.

    PYTHONPATH=python python3 bench/python_overhead.py            # CPU (numpy, torch) and, with a GPU, CUDA

For each case the same forward is timed three ways, in one process, on the same arrays:
  kernel   the C++ call alone: the extension runs the kernel `repeat` times inside one call (options.repeat), so
           the binding's work is paid once and divided away
  binding  linea._linea.forward with prebuilt arrays (torch tensors as the package describes them) and options:
           the kernel plus the binding's argument work
  python   the public function (linea.fused_recurrent_* / linea.chunk_*): everything a user pays
  py path  the same with the C++ path of the call turned off (python/src/fla_call.hpp): the package's Python path,
           which every call took before that path existed
and `python - kernel` is the overhead. CPU times are min-of-5 timeit means, and with --runs R the lowest of R
such tables (a loaded machine); CUDA ones time `n` calls then one synchronisation (host-bound at these shapes:
launch cost included in every column). One CPU thread, so the thread pool's start-up is not in the numbers.
Prints a Markdown table (bench/README.md has the last one).
"""
from __future__ import annotations

import argparse
import time
import timeit

import numpy as np

import linea
from linea import _core, _linea, _ops

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
    tensors = arrays  # kept alive: the descriptions below hold their pointers only
    if kind != "numpy":
        arrays = {n: _core.A.for_kernel(a) for n, a in arrays.items()}
    if pool is not None:  # the decode step over a pool, updated in place
        arrays.update({n: _core.A.for_kernel(a) for n, a in (("initial_state", pool["pool"]),
                                                              ("final_state", pool["pool"]),
                                                              ("state_indices", pool["idx"]))})
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
    assert tensors is not None
    native.repeat = n
    t_kernel = timed(binding, 1, sync) / n  # one call, n kernels
    native.repeat = 1
    t_py = timed(f, n, sync)
    fast, _ops._fast = _ops._fast, lambda *a: None
    try:
        t_slow = timed(f, n, sync)
    finally:
        _ops._fast = fast
    return label, kind, t_kernel, t_bind, t_py, t_slow


def _bench_inputs(rule, B, T, H, K, V, dt, seed=0):
    """Inputs of linea.chunk_<rule> at bench/cuda's shape, every tensor in dt (bench/cuda's inputs are all bf16:
    no widening), with the final state written, as bench/cuda's chunkwise rows do."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    rnd = lambda *shape: torch.randn(*shape, device="cuda", generator=g)  # noqa: E731
    q, k, v = rnd(B, T, H, K), rnd(B, T, H, K), rnd(B, T, H, V)
    k = k / k.norm(dim=-1, keepdim=True)
    logdecay = lambda *shape: -torch.nn.functional.softplus(-rnd(*shape)) / 4  # noqa: E731
    gates = {
        "linear_attn": ((), {"normalize": False}),  # bench/cuda times the additive rule without the normaliser
        "simple_gla": ((logdecay(B, T, H),), {}),
        "gla": ((logdecay(B, T, H, K),), {}),
        "delta_rule": ((rnd(B, T, H).sigmoid(),), {}),
        "gated_delta_rule": ((logdecay(B, T, H), rnd(B, T, H).sigmoid()), {}),
        "kda": ((logdecay(B, T, H, K), rnd(B, T, H).sigmoid()), {}),
        "gdn2": ((logdecay(B, T, H, K), rnd(B, T, H, K).sigmoid(), rnd(B, T, H, V).sigmoid()), {}),
    }[rule]
    args = tuple(x.to(dt) for x in (q, k, v) + gates[0])
    return args, dict(gates[1], output_final_state=True)


# linea's op names (fla's), as bench/cuda prints them too.
_RULES = ("linear_attn", "simple_gla", "gla", "delta_rule", "gated_delta_rule", "kda", "gdn2")


def _cpp_chunk_ms(path):
    """{rule: ms} of bench/cuda's chunkwise rows (identity read, V = 128, no in-kernel norm) from its JSON lines."""
    import json

    out = {}
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("kind") == "chunkwise" and r.get("read", "identity") == "identity" and r.get("V", 128) == 128 \
                and not r.get("qk_l2norm", False) and "rule" in r and r["rule"] not in out:
            out[r["rule"]] = r["ms"]
    return out


_VARIANTS = ("torch", "bare", "bind", "loop", "slow", "fresh")


def _sustain(g, ms, per=1):
    """Runs g() for at least `ms` milliseconds of device work (synchronising every ~8 kernels, so the host's clock
    follows the device's)."""
    t0, i = time.perf_counter(), 0
    while (time.perf_counter() - t0) * 1e3 < ms:
        g()
        i += per
        if i % 8 < per:
            torch.cuda.synchronize()
    torch.cuda.synchronize()


def large(cpp=None, B=8, T=4096, H=16, K=128, V=128, calls=10, repeats=7, warmup=20, rounds=4, rules=_RULES,
          warm_ms=0.0, idle_ms=0.0, variants=_VARIANTS):
    """The torch CUDA path (linea.chunk_<rule>, bf16) against the kernel at bench/cuda's shape, timed as bench/cuda
    times (bench/cuda/bench_cuda.cu, time_ms): CUDA events around `calls` back-to-back calls, the median of
    `repeats`. With `cpp` (bench/cuda's JSON lines from the same machine), also the ratio to bench/cuda's figure.

    Every variant of a rule is measured `rounds` times, the variants' order rotated each round, and the median over
    the rounds is printed (the spread too): measured once each in a fixed order, as before, an effect of the order
    (clocks, the first measurement of a rule) could not be told from a difference between the calls. Two timings
    of the public call:
      queued  a ~50 µs GPU sleep is queued before the start event, so the host's time to issue the first call is
              hidden, as behind a model's queue of work (the C++ loop issues its first kernel after ~5 µs; a Python
              call after ~25: 2.5 µs a call of 10 charged to the Python call alone otherwise);
      bare    as before: the start event on an idle GPU.

    The board's state is part of the measurement (bench/README.md, "linear_attn against bench/cuda"): a rule here
    runs for a second or more, bench/cuda's row is a burst of ~75 calls (~25 ms), and one H200 was at its 700 W limit
    and 1845–1965 MHz under linear_attn's rows here. `warm_ms` runs each rule's public call that long before its
    measurements (as bench/cuda's --warm-ms does before each row): both then measure a long run's state. `idle_ms`
    instead leaves the GPU idle that long before every measurement, which then starts after one call (a burst, as
    bench/cuda's rows without --warm-ms). `variants`: the columns measured (torch and loop always)."""
    variants = tuple(dict.fromkeys(("torch", "loop") + tuple(variants)))
    ref = _cpp_chunk_ms(cpp) if cpp else {}

    def median_ms(g, queued=True, per=1):
        """g() runs `per` kernels: `calls` kernels in all between the events."""
        if idle_ms:  # a burst after an idle GPU
            torch.cuda.synchronize()
            time.sleep(idle_ms / 1e3)
            g()
        times = []
        for _ in range(repeats):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if queued:
                torch.cuda._sleep(100_000)  # ~50 µs at the H200's clock: busy while the first call is issued
            a.record()
            for _ in range(calls // per):
                g()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / calls)
        return sorted(times)[len(times) // 2]

    state = f"each rule's call run {warm_ms:g} ms first" if warm_ms else \
        (f"every measurement after {idle_ms:g} ms idle" if idle_ms else "no sustained warm-up")
    print(f"\nchunk_* at B={B} T={T} H={H} K=V={K}, bf16, final state written (CUDA events, median of {repeats} x "
          f"{calls} calls; each column the median of {rounds} rounds in rotated order, [min-max] of the rounds; "
          f"{state})\n")
    print("| rule | linea.chunk_* (torch) queued ms | bare ms | _linea.forward ms | "
          "its outputs allocated per call ms | C++ loop in the module ms | bench/cuda ms | torch / bench/cuda | "
          "torch / C++ loop | host µs a call | Python path ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for rule in rules:
        args, kw = _bench_inputs(rule, B, T, H, K, V, torch.bfloat16)
        f = getattr(linea, f"chunk_{rule}")
        with torch.no_grad():
            q, k, v = args[:3]
            x = {"q": q, "k": k, "v": v}
            x.update(zip({"linear_attn": (), "simple_gla": ("g",), "gla": ("gk",), "delta_rule": ("beta",),
                          "gated_delta_rule": ("g", "beta"), "kda": ("gk", "beta"), "gdn2": ("gk", "b", "w")}[rule],
                         args[3:]))
            arrays = {n: _core.A.for_kernel(t) for n, t in x.items()}
            # Held while the descriptions (pointers only) are used.
            outs = (torch.empty(B, T, H, V, device="cuda", dtype=torch.bfloat16), torch.empty(B, H, K, V, device="cuda"))
            arrays["o"], arrays["final_state"] = (_core.A.for_kernel(t) for t in outs)
            native = _core.Options(form="chunkwise").native("cuda", "bfloat16", _core.A.stream_of(q))
            native_loop = _linea.options()  # the same options, with repeat = calls: the kernel alone
            for name in ("form", "read", "backend", "dtype", "scale", "qk_l2norm", "beta_act", "normalize",
                         "lower_bound", "chunk_size", "threads", "stream"):
                setattr(native_loop, name, getattr(native, name))
            native_loop.repeat = calls

            def slow():
                fast, _ops._fast = _ops._fast, lambda *a: None  # the Python path of the call, for comparison
                try:
                    f(*args, **kw)
                finally:
                    _ops._fast = fast

            def fresh():  # _linea.forward into outputs allocated for the call, as the public call's are
                o = torch.empty(B, T, H, V, device="cuda", dtype=torch.bfloat16)
                h = torch.empty(B, H, K, V, device="cuda")
                given = dict(arrays, o=_core.A.for_kernel(o), final_state=_core.A.for_kernel(h))  # noqa: B023
                _linea.forward(rule, given, native)  # noqa: B023

            measured = {
                "torch": (lambda: f(*args, **kw), True, 1),  # noqa: B023
                "bare": (lambda: f(*args, **kw), False, 1),  # noqa: B023
                "bind": (lambda: _linea.forward(rule, arrays, native), True, 1),  # noqa: B023
                "loop": (lambda: _linea.forward(rule, arrays, native_loop), True, calls),  # noqa: B023
                "slow": (slow, True, 1),
                "fresh": (fresh, True, 1),
            }
            measured = {name: measured[name] for name in variants}
            for g, _, _ in measured.values():
                for _ in range(warmup):
                    g()
            torch.cuda.synchronize()
            if warm_ms:
                _sustain(measured["torch"][0], warm_ms)
            got = {name: [] for name in measured}
            names = list(measured)
            for r in range(rounds):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    g, queued, per = measured[name]
                    got[name].append(median_ms(g, queued, per))
            # The host's time to issue one call (no synchronisation inside the loop): far below the kernel's, the
            # calls queue and the host's work is hidden; near it, something in the call waits for the device.
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                f(*args, **kw)
            host_us = (time.perf_counter() - t0) / calls * 1e6
            torch.cuda.synchronize()
            del outs
        med = {n: sorted(v)[len(v) // 2] for n, v in got.items()}
        cell = lambda n: f"{med[n]:.4f} [{min(got[n]):.4f}-{max(got[n]):.4f}]" if n in got else "-"  # noqa: E731
        cpp_ms = ref.get(rule)
        ratio = f"{med['torch'] / cpp_ms:.3f}" if cpp_ms else "-"
        print(f"| {rule} | {cell('torch')} | {cell('bare')} | {cell('bind')} | {cell('fresh')} | {cell('loop')} | "
              f"{cpp_ms if cpp_ms else '-'} | {ratio} | {med['torch'] / med['loop']:.3f} | {host_us:.1f} | "
              f"{cell('slow')} |", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=2000, help="calls per timing")
    p.add_argument("--runs", type=int, default=1, help="tables to measure; each column's lowest is printed")
    p.add_argument("--large", action="store_true", help="also the 8x4096 CUDA comparison, every rule")
    p.add_argument("--cpp", help="bench/cuda's JSON lines (linea_cuda_bench --chunk-only --no-ccq) to compare with")
    p.add_argument("--rules", default=",".join(_RULES), help="the rules of the --large table")
    p.add_argument("--rounds", type=int, default=4, help="rounds of the --large table (rotated order)")
    p.add_argument("--large-only", action="store_true", help="only the --large table")
    p.add_argument("--warm-ms", type=float, default=0.0,
                   help="--large: run each rule's call this long before measuring it (bench/cuda's --warm-ms)")
    p.add_argument("--idle-ms", type=float, default=0.0,
                   help="--large: leave the GPU idle this long before every measurement (a burst, as bench/cuda's rows)")
    p.add_argument("--variants", default=",".join(_VARIANTS),
                   help="--large: the columns to measure (torch and loop always)")
    p.add_argument("--kinds", help="the overhead table's kinds of arrays, e.g. torch-cuda (default: every one here)")
    args = p.parse_args()
    linea.set_num_threads(1)
    kinds = ["numpy"] + (["torch-cpu"] if torch is not None else [])
    if torch is not None and torch.cuda.is_available() and _linea.has_cuda:
        kinds.append("torch-cuda")
    if args.kinds:
        kinds = [k for k in kinds if k in args.kinds.split(",")]
    if args.large_only:
        large(args.cpp, rounds=args.rounds, rules=tuple(args.rules.split(",")), warm_ms=args.warm_ms,
              idle_ms=args.idle_ms, variants=tuple(args.variants.split(",")))
        return
    best = {}
    for _ in range(max(1, args.runs)):
        for kind in kinds:
            H, K, V = 4, 64, 64
            step = inputs(1, 1, H, K, V)
            pool = {"pool": np.zeros((8, H, K, V), np.float32), "idx": np.array([3], np.int32)}
            for row in (case("decode step, B=1, H=4, K=V=64", kind, step, "step", args.n, pool),
                        case("chunk, B=1, T=64, H=4, K=V=64", kind, inputs(1, 64, H, K, V), "chunkwise",
                             args.n // 10)):
                key = row[:2]
                best[key] = row if key not in best else key + tuple(map(min, best[key][2:], row[2:]))
    rows = list(best.values())
    print("| call | arrays | kernel (C++ loop) µs | _linea.forward µs | linea.* µs | Python adds µs | "
          "Python path µs | it adds µs |")
    print("|---|---|---|---|---|---|---|---|")
    for label, kind, tk, tb, tp, ts in rows:
        print(f"| {label} | {kind} | {tk:.1f} | {tb:.1f} | {tp:.1f} | {tp - tk:.1f} | {ts:.1f} | {ts - tk:.1f} |")
    if args.large and "torch-cuda" in kinds:
        large(args.cpp, rounds=args.rounds, rules=tuple(args.rules.split(",")), warm_ms=args.warm_ms,
              idle_ms=args.idle_ms, variants=tuple(args.variants.split(",")))


if __name__ == "__main__":
    main()
