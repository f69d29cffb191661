#!/usr/bin/env python3
"""Conformance cases for the fla options that no shared vector exercises, then the runner on them.

    option_cases.py OUT_DIR [RUNNER]

Writes cases in the shared format (../shared/conformance/README.md) for g_gamma (with its gradient), normalize and the
in-kernel gates (Gated DeltaNet softplus form, KDA/GDN-2 per-key dt_bias, KDA's lower bound), each with
the write residual u. The truths come from the float64 recurrence below, written from SPEC.md §1-2 alone
(plain Python, no linea code), on the float32-rounded inputs. With RUNNER, runs it on OUT_DIR and exits
with its status (ctest: conformance_options).
"""
import json
import math
import os
import random
import struct
import subprocess
import sys


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def softplus(x):
    return x if x > 20 else math.log1p(math.exp(x))


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


class Case:
    """One case: shapes, inputs (float32-rounded nested lists) and options."""

    def __init__(self, op, name, B, T, H, HV, K, V, seed, cu=None):
        self.op, self.name = op, name
        self.B, self.T, self.H, self.HV, self.K, self.V = B, T, H, HV, K, V
        self.cu = cu
        self.N = len(cu) - 1 if cu else B
        self.rng = random.Random(seed)
        self.params = {"B": B, "T": T, "H": H, "HV": HV, "K": K, "V": V, "N": self.N, "seed": seed,
                       "scale": K ** -0.5, "cu_seqlens": cu, "has_initial_state": False,
                       "input_rounding": "none (float32)"}
        self.files = {}  # name -> (dtype, shape, flat values)

    def draw(self, shape, fn):
        n = 1
        for e in shape:
            n *= e
        return [f32(fn()) for _ in range(n)], list(shape)

    def add(self, name, values_shape, dtype="float32"):
        values, shape = values_shape
        self.files[name] = (dtype, shape, values)
        return values


def at(flat, shape, *idx):
    off = 0
    for i, e in zip(idx, shape):
        off = off * e + i
    return flat[off]


def run_reference(c, opts):
    """Token by token in float64 (SPEC §2): decay, correct, write, read; returns o, ht, u as flat lists."""
    B, T, H, HV, K, V, N = c.B, c.T, c.H, c.HV, c.K, c.V, c.N
    G = HV // H
    q, qs = c.files["q"][2], c.files["q"][1]
    k, ks = c.files["k"][2], c.files["k"][1]
    v, vs = c.files["v"][2], c.files["v"][1]
    o = [0.0] * (B * T * HV * V)
    u_out = [0.0] * (B * T * HV * V)
    ht = [0.0] * (N * HV * K * V)
    scale = c.params["scale"]
    seqs = [(n, 0, T) for n in range(B)] if not c.cu else [(0, c.cu[n], c.cu[n + 1]) for n in range(N)]
    for n, (b, t0, t1) in enumerate(seqs):
        for hv in range(HV):
            h = hv // G
            S = [[0.0] * V for _ in range(K)]
            if "h0" in c.files:
                h0, h0s = c.files["h0"][2], c.files["h0"][1]
                S = [[at(h0, h0s, n, hv, i, j) for j in range(V)] for i in range(K)]
            z = [0.0] * K  # normalize: z_0 = 0 at the start of every sequence
            for t in range(t0, t1):
                qt = [at(q, qs, b, t, h, i) for i in range(K)]
                kt = [at(k, ks, b, t, h, i) for i in range(K)]
                vt = [at(v, vs, b, t, hv, j) for j in range(V)]
                log_alpha = opts["log_alpha"](b, t, hv)  # K log decays
                erase, write = opts["gates"](b, t, hv)    # K erase gates, V write gates
                S = [[S[i][j] * math.exp(log_alpha[i]) for j in range(V)] for i in range(K)]
                u = [write[j] * vt[j] - sum(erase[i] * kt[i] * S[i][j] for i in range(K)) for j in range(V)]
                S = [[S[i][j] + kt[i] * u[j] for j in range(V)] for i in range(K)]
                out = [sum(S[i][j] * scale * qt[i] for i in range(K)) for j in range(V)]
                if opts.get("normalize"):
                    z = [z[i] + kt[i] for i in range(K)]
                    den = sum(scale * qt[i] * z[i] for i in range(K)) + 1e-10
                    out = [x / den for x in out]
                for j in range(V):
                    o[((b * T + t) * HV + hv) * V + j] = out[j]
                    u_out[((b * T + t) * HV + hv) * V + j] = u[j]
            for i in range(K):
                for j in range(V):
                    ht[((n * HV + hv) * K + i) * V + j] = S[i][j]
    return o, ht, u_out


def make_case(c, opts):
    o, ht, u = run_reference(c, opts)
    c.add("o_ref64", (o, [c.B, c.T, c.HV, c.V]), "float64")
    c.add("ht_ref64", (ht, [c.N, c.HV, c.K, c.V]), "float64")
    c.add("u_ref64", (u, [c.B, c.T, c.HV, c.V]), "float64")
    return c


def add_gamma_gradient(c, gamma, opts, heads):
    """Makes c a gradient case for g_gamma alone: do, dht and dg_ref64 [heads] = dL/d g_gamma of
    L = <o, do> + <ht, dht>. g_gamma enters every token of its head (S_t = a S_{t-1} + k_t v_t^T, a = exp(g_gamma),
    o_t = S_t^T (s q_t)), so the runner's stride-0 dg must hold the sum over all of them. The truth is the reverse
    recurrence of that map (dS_T = dht; per token dS += s q_t do_t^T, dg += <dS, a S_{t-1}>, dS = a dS), checked here
    against central differences of run_reference."""
    r = c.rng
    do = c.add("do", c.draw([c.B, c.T, c.HV, c.V], lambda: r.gauss(0, 1)))
    dht = c.add("dht", c.draw([c.N, c.HV, c.K, c.V], lambda: r.gauss(0, 1)))
    B, T, H, HV, K, V, N = c.B, c.T, c.H, c.HV, c.K, c.V, c.N
    G, scale = HV // H, c.params["scale"]
    q, qs = c.files["q"][2], c.files["q"][1]
    k, ks = c.files["k"][2], c.files["k"][1]
    v, vs = c.files["v"][2], c.files["v"][1]
    seqs = [(n, 0, T) for n in range(B)] if not c.cu else [(0, c.cu[n], c.cu[n + 1]) for n in range(N)]
    dg = [0.0] * HV
    for n, (b, t0, t1) in enumerate(seqs):
        for hv in range(HV):
            h, a = hv // G, math.exp(gamma[hv])
            S = [[0.0] * V for _ in range(K)]
            if "h0" in c.files:
                h0, h0s = c.files["h0"][2], c.files["h0"][1]
                S = [[at(h0, h0s, n, hv, i, j) for j in range(V)] for i in range(K)]
            states = [S]
            for t in range(t0, t1):
                S = [[a * S[i][j] + at(k, ks, b, t, h, i) * at(v, vs, b, t, hv, j) for j in range(V)] for i in range(K)]
                states.append(S)
            dS = [[at(dht, [N, HV, K, V], n, hv, i, j) for j in range(V)] for i in range(K)]
            for t in range(t1 - 1, t0 - 1, -1):
                prev = states[t - t0]
                for i in range(K):
                    for j in range(V):
                        dS[i][j] += scale * at(q, qs, b, t, h, i) * at(do, [B, T, HV, V], b, t, hv, j)
                        dg[hv] += dS[i][j] * a * prev[i][j]
                        dS[i][j] *= a
    if heads == HV:
        c.add("dg_ref64", (dg, [HV]), "float64")
    else:  # stored per key head: the sum over the G value heads that read it
        c.add("dg_ref64", ([sum(dg[h * G:(h + 1) * G]) for h in range(heads)], [heads]), "float64")

    def loss(g):
        o, ht, _ = run_reference(c, dict(opts, log_alpha=lambda b, t, hv, K=c.K: [g[hv]] * K))
        return sum(x * y for x, y in zip(o, do)) + sum(x * y for x, y in zip(ht, dht))

    for hv in range(HV):  # the reverse recurrence against central differences of the forward
        up, down = list(gamma), list(gamma)
        up[hv] += 1e-5
        down[hv] -= 1e-5
        fd = (loss(up) - loss(down)) / 2e-5
        assert abs(fd - dg[hv]) <= 1e-6 * max(1.0, abs(dg[hv])), (c.name, hv, fd, dg[hv])
    return c


def base_inputs(c, positive=False, h0=True):
    """q, k (unit rows; positive entries for normalize), v, and optionally h0."""
    B, T, H, HV, K, V = c.B, c.T, c.H, c.HV, c.K, c.V
    r = c.rng
    c.add("q", c.draw([B, T, H, K], (lambda: abs(r.gauss(0, 1))) if positive else (lambda: r.gauss(0, 1))))
    kk = []
    for _ in range(B * T * H):
        row = [abs(r.gauss(0, 1)) if positive else r.gauss(0, 1) for _ in range(K)]
        norm = math.sqrt(sum(x * x for x in row))
        kk += [f32(x / norm) for x in row]
    c.add("k", (kk, [B, T, H, K]))
    c.add("v", c.draw([B, T, HV, V], lambda: r.gauss(0, 1)))
    if h0:
        c.add("h0", c.draw([c.N, HV, K, V], lambda: r.gauss(0, 1)))
        c.params["has_initial_state"] = True


def flags(c, **kw):
    c.params.update({"use_qk_l2norm_in_kernel": False, "use_gate_in_kernel": False, "safe_gate": False,
                     "lower_bound": None, "normalize": False, "g_gamma": False})
    c.params.update(kw)


def ones(n):
    return [1.0] * n


def cases():
    out = []

    # simple_gla with g_gamma [HV]: a constant log decay per head, no g tensor.
    # The third stores g_gamma per key head [H] (value head hv uses hv / G): its gradient truth is [H] too.
    for name, H, HV, heads in (("g_gamma_t40", 2, 2, 2), ("g_gamma_gva_t33", 1, 2, 2), ("g_gamma_per_key_head_t29", 1, 2, 1)):
        c = Case("simple_gla", name, 2, {2: 40, 1: 33}[H] if heads == HV else 29, H, HV, 8, 4, seed=11 + HV + H + heads)
        base_inputs(c)
        flags(c, g_gamma=True)
        stored = c.add("g_gamma", c.draw([heads], lambda: math.log(sigmoid(c.rng.gauss(0, 1)))))
        gamma = [stored[hv * heads // HV] for hv in range(HV)]
        opts = {"log_alpha": lambda b, t, hv, g=gamma, K=c.K: [g[hv]] * K,
                "gates": lambda b, t, hv, K=c.K, V=c.V: ([0.0] * K, ones(V))}
        out.append(add_gamma_gradient(make_case(c, opts), gamma, opts, heads))

    # linear_attn with normalize: positive q, k; once plain, once packed with initial states.
    for name, cu in (("normalize_t37", None), ("normalize_varlen_h0", [0, 9, 9, 30])):
        c = Case("linear_attn", name, 1, 37 if cu is None else 30, 2, 2, 8, 4, seed=21, cu=cu)
        base_inputs(c, positive=True, h0=cu is not None)
        flags(c, normalize=True)
        out.append(make_case(c, {"log_alpha": lambda b, t, hv, K=c.K: [0.0] * K,
                                 "gates": lambda b, t, hv, K=c.K, V=c.V: ([0.0] * K, ones(V)),
                                 "normalize": True}))

    # Gated DeltaNet with the in-kernel gate: g = -exp(A_log[hv]) * softplus(x + dt_bias[hv]).
    c = Case("gated_delta_rule", "gate_in_kernel_t35", 1, 35, 2, 4, 8, 4, seed=31)
    base_inputs(c)
    flags(c, use_gate_in_kernel=True)
    x = c.add("g", c.draw([c.B, c.T, c.HV], lambda: c.rng.gauss(0, 2)))
    A_log = c.add("A_log", c.draw([c.HV], lambda: c.rng.uniform(-1, 1)))
    dt = c.add("dt_bias", c.draw([c.HV], lambda: c.rng.uniform(-1, 1)))
    beta = c.add("beta", c.draw([c.B, c.T, c.HV], lambda: sigmoid(c.rng.gauss(0, 1))))
    out.append(make_case(c, {
        "log_alpha": lambda b, t, hv, c=c: [-math.exp(A_log[hv]) * softplus(x[(b * c.T + t) * c.HV + hv] + dt[hv])] * c.K,
        "gates": lambda b, t, hv, c=c: ([beta[(b * c.T + t) * c.HV + hv]] * c.K,
                                        [beta[(b * c.T + t) * c.HV + hv]] * c.V)}))

    # KDA and GDN-2 with per-key dt_bias [HV, K]; KDA once more with a lower bound (safe gate).
    for op, name, lower in (("kda", "gate_in_kernel_t34", None), ("kda", "gate_lower_bound_t34", -5.0),
                            ("gdn2", "gate_in_kernel_t34", None)):
        c = Case(op, name, 2, 34, 2, 2, 8, 4, seed=41 if lower is None else 43)
        base_inputs(c)
        flags(c, use_gate_in_kernel=True, safe_gate=lower is not None, lower_bound=lower)
        x = c.add("g", c.draw([c.B, c.T, c.HV, c.K], lambda: c.rng.gauss(0, 2)))
        A_log = c.add("A_log", c.draw([c.HV], lambda: c.rng.uniform(-1, 1)))
        dt = c.add("dt_bias", c.draw([c.HV, c.K], lambda: c.rng.uniform(-1, 1)))

        def log_alpha(b, t, hv, c=c, x=x, A_log=A_log, dt=dt, lower=lower):
            row = [x[((b * c.T + t) * c.HV + hv) * c.K + i] + dt[hv * c.K + i] for i in range(c.K)]
            if lower is None:
                return [-math.exp(A_log[hv]) * softplus(r) for r in row]
            return [lower * sigmoid(math.exp(A_log[hv]) * r) for r in row]

        if op == "kda":
            beta = c.add("beta", c.draw([c.B, c.T, c.HV], lambda: sigmoid(c.rng.gauss(0, 1))))
            gates = lambda b, t, hv, c=c, beta=beta: ([beta[(b * c.T + t) * c.HV + hv]] * c.K,
                                                      [beta[(b * c.T + t) * c.HV + hv]] * c.V)
        else:
            eb = c.add("b", c.draw([c.B, c.T, c.HV, c.K], lambda: sigmoid(c.rng.gauss(0, 1))))
            ew = c.add("w", c.draw([c.B, c.T, c.HV, c.V], lambda: sigmoid(c.rng.gauss(0, 1))))
            gates = lambda b, t, hv, c=c, eb=eb, ew=ew: (
                [eb[((b * c.T + t) * c.HV + hv) * c.K + i] for i in range(c.K)],
                [ew[((b * c.T + t) * c.HV + hv) * c.V + j] for j in range(c.V)])
        out.append(make_case(c, {"log_alpha": log_alpha, "gates": gates}))
    return out


def write(c, root):
    d = os.path.join(root, c.op, c.name)
    os.makedirs(d, exist_ok=True)
    files = {}
    for name, (dtype, shape, values) in c.files.items():
        fmt = {"float32": "f", "float64": "d", "int64": "q"}[dtype]
        with open(os.path.join(d, name + ".bin"), "wb") as f:
            f.write(struct.pack("<%d%s" % (len(values), fmt), *values))
        grad = name in ("do", "dht") or (name[0] == "d" and name.endswith("_ref64"))
        role = "output" if name.endswith("_ref64") else "input"
        files[name] = {"file": name + ".bin", "dtype": dtype, "shape": shape,
                       "role": ("grad_" + role) if grad else role}
    if c.cu:
        with open(os.path.join(d, "cu_seqlens.bin"), "wb") as f:
            f.write(struct.pack("<%dq" % len(c.cu), *c.cu))
        files["cu_seqlens"] = {"file": "cu_seqlens.bin", "dtype": "int64", "shape": [len(c.cu)], "role": "input"}
    manifest = {"schema": "fla-linear-attn-vectors/1", "op": c.op, "case": c.name, "status": "ok",
                "params": c.params, "files": files,
                "notes": ["written by linea's tools/conformance/option_cases.py (float64 recurrence from SPEC.md)"]}
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    root = sys.argv[1]
    for c in cases():
        write(c, root)
    if len(sys.argv) == 3:
        sys.exit(subprocess.call([sys.argv[2], root]))


if __name__ == "__main__":
    main()
