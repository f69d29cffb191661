"""Check a kernel against linea's float64 reference on random inputs: the kernel-verification use in one line.

    python -m linea.verify my_kernels:chunk_gated_delta_rule --op gated_delta_rule --shape 2,256,4,64,64
    python -m linea.verify my_kernels:fwd --op kda --shape 1,1024,2,128,128 --hv 4 --dtype bfloat16 --torch --device cuda

The function is called as fla calls its op (fla's signature for `--form`, default chunk: for gated_delta_rule
f(q, k, v, g, beta, scale=None, initial_state=h0, output_final_state=True)) and must return (o, final_state).
The inputs are drawn as fla's tests draw them (unit-norm keys for the delta rules, log decays logsigmoid(x)/4, β in
(0, 1)). Prints the relative error ‖x − ref‖ / ‖ref‖ of o and of the final state against linea.reference and the
SPEC §5 bound for the dtype; the exit status is 1 when one is above it. A final state of None (a kernel that does not
return one) is not compared: reported as absent (None from verify(), SKIP on the command line).

From Python: `linea.verify.verify(f, "gated_delta_rule", B=2, T=256, H=4, K=64, V=64)` returns the errors.
"""
from __future__ import annotations

import argparse
import importlib
import sys

import numpy as np

from . import reference

OPS = ("linear_attn", "simple_gla", "gla", "delta_rule", "gated_delta_rule", "kda", "gdn2")
# SPEC §5: relative error against float64 for each input type (float32: up to T = 4096; 1e-4 up to 65536).
BOUNDS = {"float64": 1e-12, "float32": 1e-5, "bfloat16": 1e-2, "float16": 1e-2}


def bound(dtype: str, T: int) -> float:
    return 1e-4 if dtype == "float32" and T > 4096 else BOUNDS[dtype]


def _logsigmoid(x):
    return -np.logaddexp(0, -x)


def _numpy_dtype(dtype: str):
    if dtype == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(dtype)


def random_inputs(op: str, form: str = "chunk", *, B=2, T=64, H=2, K=16, V=16, HV=None, dtype="float32", seed=0,
                  initial_state=False):
    """(positional, keyword) numpy arguments of fla's `<form>_<op>` with random inputs in `dtype`."""
    if op not in OPS:
        raise ValueError(f"linea: op {op!r} is not one of {', '.join(OPS)}")
    HV = HV or H
    rng = np.random.default_rng(seed)
    n = lambda *s: rng.standard_normal(s)  # noqa: E731
    c = lambda x: np.asarray(x).astype(_numpy_dtype(dtype))  # noqa: E731
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    q, k, v = n(B, T, H, K), n(B, T, H, K), n(B, T, HV, V)
    if op in ("delta_rule", "gated_delta_rule", "kda", "gdn2"):  # the delta rules want unit-norm keys
        k /= np.linalg.norm(k, axis=-1, keepdims=True)
    args, kw = [c(q), c(k), c(v)], {}
    if op == "simple_gla":
        kw["g"] = c(_logsigmoid(n(B, T, HV)) / 4)
    elif op == "gla":
        kw["g" if form == "chunk" else "gk"] = c(_logsigmoid(n(B, T, HV, K)) / 4)
    elif op == "delta_rule":
        args.append(c(sig(n(B, T, HV))))
    elif op == "gated_delta_rule" and form == "fused_recurrent":  # fla's order there: g, gk, gv, beta
        kw.update(g=c(_logsigmoid(n(B, T, HV)) / 4), beta=c(sig(n(B, T, HV))))
    elif op == "gated_delta_rule":
        args += [c(_logsigmoid(n(B, T, HV)) / 4), c(sig(n(B, T, HV)))]
    elif op == "kda":
        args += [c(_logsigmoid(n(B, T, HV, K)) / 4), c(sig(n(B, T, HV)))]
    elif op == "gdn2":
        args += [c(_logsigmoid(n(B, T, HV, K)) / 4), c(sig(n(B, T, HV, K))), c(sig(n(B, T, HV, V)))]
    if op == "linear_attn":
        kw["normalize"] = False
    if initial_state:
        kw["initial_state"] = n(B, HV, K, V).astype(np.float64 if dtype == "float64" else np.float32)
    return args, kw


def to_torch(args, kw, **tensor_kw):
    """The same arguments as torch tensors (tensor_kw: device=..., dtype=...; ml_dtypes bfloat16 becomes torch's)."""
    import torch

    def conv(x):
        if not isinstance(x, np.ndarray):
            return x
        if x.dtype.name == "bfloat16":
            return torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16).to(**tensor_kw)
        return torch.from_numpy(np.ascontiguousarray(x)).to(**tensor_kw)

    return [conv(a) for a in args], {k: conv(v) for k, v in kw.items()}


def relative_error(x, ref) -> float:
    """‖x − ref‖ / ‖ref‖ in float64 (SPEC §5); x may be a numpy array or a torch tensor on any device."""
    if x is None or ref is None:  # (numpy would read None as a 0-d NaN)
        raise ValueError("linea.verify: an output is None; there is nothing to compare")
    if hasattr(x, "detach"):  # torch: numpy has no bfloat16, so every float tensor goes through float64
        x = x.detach().cpu()
        x = (x.double() if x.dtype.is_floating_point else x).numpy()
    x, ref = np.asarray(x, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if x.shape != ref.shape:  # (numpy would broadcast one onto the other and compare the wrong elements)
        raise ValueError(f"linea.verify: an output has shape {list(x.shape)}; the reference's is {list(ref.shape)}")
    den = np.linalg.norm(ref)
    return float(np.linalg.norm(x - ref) / den) if den > 0 else float(np.linalg.norm(x))


def verify(fn, op: str, form: str = "chunk", *, B=2, T=64, H=2, K=16, V=16, HV=None, dtype="float32", seed=0,
           torch=False, device="cpu", **fn_kw) -> dict:
    """Runs fn and linea.reference.<form>_<op> on the same random inputs; {"o": err, "final_state": err}, the
    final state's None where fn returned none (nothing to compare)."""
    args, kw = random_inputs(op, form, B=B, T=T, H=H, K=K, V=V, HV=HV, dtype=dtype, seed=seed, initial_state=True)
    o64, ht64 = getattr(reference, f"{form}_{op}")(*args, **kw, output_final_state=True)
    if torch:
        args, kw = to_torch(args, kw, device=device)
    o, ht = fn(*args, **kw, **fn_kw, output_final_state=True)[:2]
    if isinstance(ht, tuple):  # linear_attn's normaliser pair (S, z)
        ht = ht[0]
    return {"o": relative_error(o, o64), "final_state": None if ht is None else relative_error(ht, ht64)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m linea.verify", description=__doc__.split("\n\n")[0])
    p.add_argument("function", help="module:function, called with fla's signature of <form>_<op>")
    p.add_argument("--op", required=True, choices=OPS)
    p.add_argument("--form", default="chunk", choices=("chunk", "fused_recurrent"))
    p.add_argument("--shape", default="2,64,2,16,16", help="B,T,H,K,V (default 2,64,2,16,16)")
    p.add_argument("--hv", type=int, default=None, help="value heads HV (a multiple of H; default H)")
    p.add_argument("--dtype", default="float32", choices=tuple(BOUNDS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--torch", action="store_true", help="pass torch tensors instead of numpy arrays")
    p.add_argument("--device", default="cpu", help="torch device of the inputs (with --torch)")
    a = p.parse_args(argv)
    module, _, name = a.function.partition(":")
    sys.path.insert(0, "")
    fn = getattr(importlib.import_module(module), name or f"{a.form}_{a.op}")
    try:
        B, T, H, K, V = (int(x) for x in a.shape.split(","))
    except ValueError:
        p.error(f"--shape {a.shape!r}: expected five integers B,T,H,K,V")
    errors = verify(fn, a.op, a.form, B=B, T=T, H=H, K=K, V=V, HV=a.hv, dtype=a.dtype, seed=a.seed, torch=a.torch,
                    device=a.device)
    limit = bound(a.dtype, T)
    ok = True
    print(f"{a.function} vs linea.reference.{a.form}_{a.op}  B={B} T={T} H={H} HV={a.hv or H} K={K} V={V} "
          f"{a.dtype}  (SPEC §5 bound {limit:g})")
    for out, err in errors.items():
        if err is None:  # not returned: nothing to compare, so neither a pass nor a fail
            print(f"  SKIP  {out:<12} not returned (None)")
            continue
        passed = err <= limit  # NaN fails
        ok = ok and passed
        print(f"  {'PASS' if passed else 'FAIL'}  {out:<12} relative error {err:.3e}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
