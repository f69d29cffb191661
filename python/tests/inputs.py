"""Random inputs of fla's functions, drawn as fla's tests draw them (unit-norm keys for the delta rules, log decays
logsigmoid(x)/4, beta in (0, 1)), in any dtype: numpy arrays, or torch tensors with to_torch."""
import numpy as np

RULES = ["linear_attn", "simple_gla", "gla", "delta_rule", "gated_delta_rule", "kda", "gdn2"]


def _logsigmoid(x):
    return -np.logaddexp(0, -x)


def random_call(rule, form, dtype, *, B=2, T=37, H=2, HV=None, K=16, V=8, seed=0):
    """(positional, keyword) arguments of linea.<form>_<rule> with random inputs of the given numpy dtype."""
    HV = HV or H
    rng = np.random.default_rng(seed)
    n = lambda *s: rng.standard_normal(s)  # noqa: E731
    q, k, v = n(B, T, H, K), n(B, T, H, K), n(B, T, HV, V)
    if rule in ("delta_rule", "gated_delta_rule", "kda", "gdn2"):  # the delta rules want unit-norm keys
        k /= np.linalg.norm(k, axis=-1, keepdims=True)
    c = lambda x: np.asarray(x).astype(dtype)  # noqa: E731
    args, kw = [c(q), c(k), c(v)], {}
    beta = 1 / (1 + np.exp(-n(B, T, HV)))
    if rule == "simple_gla":
        kw["g"] = c(_logsigmoid(n(B, T, HV)) / 4)
    elif rule == "gla":
        kw["g" if form == "chunk" else "gk"] = c(_logsigmoid(n(B, T, HV, K)) / 4)
    elif rule == "delta_rule":
        args.append(c(beta))
    elif rule == "gated_delta_rule" and form == "fused_recurrent":  # fla's order there: g, gk, gv, beta
        kw.update(g=c(_logsigmoid(n(B, T, HV)) / 4), beta=c(beta))
    elif rule == "gated_delta_rule":
        args += [c(_logsigmoid(n(B, T, HV)) / 4), c(beta)]
    elif rule == "kda":
        args += [c(_logsigmoid(n(B, T, HV, K)) / 4), c(beta)]
    elif rule == "gdn2":
        args += [c(_logsigmoid(n(B, T, HV, K)) / 4), c(1 / (1 + np.exp(-n(B, T, HV, K)))),
                 c(1 / (1 + np.exp(-n(B, T, HV, V))))]
    if rule == "linear_attn":
        kw["normalize"] = False
    return args, kw


def to_torch(args, kw, **tensor_kw):
    import torch

    conv = lambda x: torch.from_numpy(np.ascontiguousarray(x)).to(**tensor_kw) if isinstance(x, np.ndarray) else x  # noqa: E731
    return [conv(a) for a in args], {k: conv(v) for k, v in kw.items()}
