"""Gradients: linea's backward through torch.autograd (gradcheck in float64 for every rule and form, the gradient
conformance cases within SPEC §6), and the extension's backward from numpy on the same cases (no torch needed)."""
import numpy as np
import pytest

import linea
from linea import _linea
from conformance import GRADIENT_TOLERANCE, cases, relative_error
from inputs import RULES, random_call, to_torch

GRAD_CASES = cases(gradients_only=True)
# Which truth is the gradient of which argument of linea.<form>_<op> (Case.call's names).
TRUTH_OF = {"q": "dq_ref64", "k": "dk_ref64", "v": "dv_ref64", "g": "dg_ref64", "gk": "dg_ref64",
            "beta": "dbeta_ref64", "b": "db_ref64", "w": "dw_ref64", "initial_state": "dh0_ref64",
            "ccq_lambda": "dlam_ref64"}
POSITIONAL = {"linear_attn": "q k v", "simple_gla": "q k v", "gla": "q k v", "delta_rule": "q k v beta",
              "gated_delta_rule": "q k v g beta", "kda": "q k v g beta", "gdn2": "q k v g b w"}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.label)
def test_gradient_cases_through_autograd(case, dtype):
    torch = pytest.importorskip("torch")
    args, kw = case.call("chunk", convert=lambda x: torch.from_numpy(x).to(getattr(torch, dtype))
                         if x.dtype.kind == "f" else torch.from_numpy(x))
    named = dict(zip(POSITIONAL[case.op].split(), args), **kw)
    leaves = {name: named[name].requires_grad_() for name in TRUTH_OF
              if torch.is_tensor(named.get(name)) and case.has(TRUTH_OF[name])}
    result = getattr(linea, case.function_name("chunk"))(*args, **kw)
    o, ht = result[0], result[1]
    loss = (o * torch.from_numpy(case.array("do")).to(o.dtype)).sum()
    loss = loss + (ht * torch.from_numpy(case.array("dht")).to(ht.dtype)).sum()
    loss.backward()
    bound = GRADIENT_TOLERANCE[dtype]
    for name, t in leaves.items():
        err = relative_error(t.grad.double().numpy(), case.array(TRUTH_OF[name]))
        assert err <= bound, f"{case.label}: d{name} relative error {err:.3g} > {bound:g}"


@pytest.mark.parametrize("case", [c for c in GRAD_CASES if not c.ccq], ids=lambda c: c.label)
def test_extension_backward_from_numpy(case):
    """The extension's backward entry point with numpy arrays (what autograd calls), in float64."""
    a = lambda name: None if case.array(name) is None else case.array(name).astype(np.float64)  # noqa: E731
    gate = "gk" if case.op in ("gla", "kda", "gdn2") else "g"
    arrays = {"q": a("q"), "k": a("k"), "v": a("v"), gate: a("g"), "beta": a("beta"), "b": a("b"), "w": a("w"),
              "initial_state": a("h0"), "d_o": a("do"), "d_final_state": a("dht")}
    cu = case.array("cu_seqlens")
    if cu is None and case.params.get("cu_seqlens"):
        cu = np.asarray(case.params["cu_seqlens"], np.int64)
    arrays["cu_seqlens"] = None if cu is None else cu.astype(np.int64)
    grads = {}
    for name, truth in TRUTH_OF.items():
        src = "h0" if name == "initial_state" else ("g" if name == "gk" else name)
        if name in arrays and arrays[name] is not None and case.has(truth) and case.has(src):
            dname = "d_initial_state" if name == "initial_state" else "d" + name
            grads[name] = arrays[dname] = np.zeros_like(arrays[name])
    o = _linea.options()
    o.dtype, o.scale = "float64", case.params["scale"]
    _linea.backward(case.op, {k: v for k, v in arrays.items() if v is not None}, o)
    for name, gr in grads.items():
        err = relative_error(gr, case.array(TRUTH_OF[name]))
        assert err <= GRADIENT_TOLERANCE["float64"], f"{case.label}: d{name} {err:.3g}"


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("form", ["chunk", "fused_recurrent"])
def test_gradcheck_float64(rule, form):
    torch = pytest.importorskip("torch")
    args, kw = random_call(rule, form, np.float64, B=1, T=9, H=1, K=4, V=3, seed=7)
    args, kw = to_torch(args, kw)
    h0 = torch.randn(1, 1, 4, 3, dtype=torch.float64)
    f = getattr(linea, f"{form}_{rule}")
    gate = [k for k in kw if k in ("g", "gk")]

    def fn(*xs):
        n = len(args)
        extra = dict(zip(gate, xs[n:n + len(gate)]))
        o, ht = f(*xs[:n], **{**kw, **extra}, initial_state=xs[-1], output_final_state=True)
        return o, ht

    inputs = [a.clone().requires_grad_() for a in args] + [kw[k].clone().requires_grad_() for k in gate]
    inputs.append(h0.requires_grad_())
    assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)


@pytest.mark.parametrize("weighting", ["uniform", "decayed"])
def test_gradcheck_ccq_read(weighting):
    torch = pytest.importorskip("torch")
    args, kw = random_call("gated_delta_rule", "chunk", np.float64, B=1, T=8, H=1, K=4, V=3, seed=11)
    args, kw = to_torch(args, kw)
    lam = torch.full(args[3].shape, 0.3, dtype=torch.float64)

    def fn(q, k, v, g, beta, lam):
        return linea.chunk_gated_delta_rule(q, k, v, g, beta, ccq_lambda=lam, ccq_weighting=weighting,
                                            output_final_state=True)

    inputs = [a.clone().requires_grad_() for a in args] + [lam.requires_grad_()]
    assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)


def test_gradcheck_gate_in_kernel():
    torch = pytest.importorskip("torch")
    args, kw = random_call("kda", "chunk", np.float64, B=1, T=7, H=1, K=4, V=3, seed=13)
    q, k, v, x, beta = to_torch(args, kw)[0]
    A_log = torch.tensor([-0.3], dtype=torch.float64)
    dt_bias = torch.randn(4, dtype=torch.float64)

    def fn(q, k, v, x, beta, A_log, dt_bias):
        return linea.chunk_kda(q, k, v, x, beta, use_gate_in_kernel=True, A_log=A_log, dt_bias=dt_bias,
                               use_qk_l2norm_in_kernel=True, use_beta_sigmoid_in_kernel=True)[0]

    # A_log and dt_bias are float32 parameters in linea (SPEC §1); their gradient is checked loosely here.
    inputs = [t.clone().requires_grad_() for t in (q, k, v, x, beta)]
    assert torch.autograd.gradcheck(lambda *xs: fn(*xs, A_log, dt_bias), inputs, eps=1e-6, atol=1e-6, rtol=1e-4)


def test_second_order_gradient_is_an_error():
    """linea's backward is not itself differentiable: a gradient penalty (create_graph=True) raises rather than
    silently losing its second-order term."""
    torch = pytest.importorskip("torch")
    args, kw = random_call("gated_delta_rule", "chunk", np.float64, B=1, T=5, H=1, K=4, V=3, seed=3)
    xs = [t.clone().requires_grad_() for t in to_torch(args, kw)[0]]
    o, _ = linea.chunk_gated_delta_rule(*xs)
    dq = torch.autograd.grad((o ** 2).sum(), xs[0], create_graph=True)[0]
    with pytest.raises(RuntimeError, match="once_differentiable"):
        (dq ** 2).sum().backward()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_training_step_in_low_precision(dtype):
    """A 16-bit (or float32) forward and backward: gradients in the input dtype, close to float64's."""
    torch = pytest.importorskip("torch")
    args, kw = random_call("gated_delta_rule", "chunk", np.float64, T=40, seed=17)
    low = [t.to(getattr(torch, dtype)).requires_grad_() for t in to_torch(args, kw)[0]]
    ref = [t.detach().double().requires_grad_() for t in low]  # the same (rounded) inputs in float64
    for xs in (ref, low):
        o, _ = linea.chunk_gated_delta_rule(*xs)
        (o.double() ** 2).sum().backward()
    bound = GRADIENT_TOLERANCE[dtype]
    for r, lo in zip(ref, low):
        assert lo.grad.dtype == lo.dtype
        assert relative_error(lo.grad.double().numpy(), r.grad.numpy()) <= bound


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("read", ["identity", "ccq_decayed"])
def test_float32_backward_matches_the_reference(rule, read):
    """linea's float32 CPU backward against the float64 reference backward on the same inputs (SPEC §6), with an
    initial state, grouped value heads and packed sequences."""
    torch = pytest.importorskip("torch")
    args, kw = random_call(rule, "chunk", np.float32, B=1, T=70, H=2, HV=4, K=16, V=8, seed=23)
    gate = [k for k in kw if k in ("g", "gk")]
    cu = np.array([0, 29, 70], np.int64)
    grads = {}
    for dtype, fn in (("float32", getattr(linea, f"chunk_{rule}")), ("float64", getattr(linea.reference, f"chunk_{rule}"))):
        xs = [torch.from_numpy(a).to(getattr(torch, dtype)).requires_grad_() for a in args]
        extra = {k: torch.from_numpy(kw[k]).to(xs[0].dtype).requires_grad_() for k in gate}
        h0 = torch.from_numpy(np.random.default_rng(5).standard_normal((2, 4, 16, 8))).to(xs[0].dtype).requires_grad_()
        options = {k: v for k, v in kw.items() if k not in gate}
        if read != "identity":
            options.update(ccq_lambda=torch.full((1, 70, 4), 0.2, dtype=xs[0].dtype), ccq_weighting="decayed")
        o, ht = fn(*xs, **extra, **options, initial_state=h0, cu_seqlens=torch.from_numpy(cu),
                   output_final_state=True)[:2]
        weights = torch.from_numpy(np.random.default_rng(6).standard_normal(tuple(o.shape)))
        ((o.double() * weights).sum() + (ht.double() ** 2).sum()).backward()
        leaves = xs + list(extra.values()) + [h0]
        assert all(t.grad.dtype == xs[0].dtype for t in leaves)
        grads[dtype] = [t.grad.double().numpy() for t in leaves]
    for i, (lo, ref) in enumerate(zip(grads["float32"], grads["float64"])):
        err = relative_error(lo, ref)
        assert err <= GRADIENT_TOLERANCE["float32"], f"{rule}/{read}: gradient {i} relative error {err:.3g}"
