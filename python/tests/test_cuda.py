"""CUDA tensors (torch): every conformance case through linea's CUDA backend on the tensor's device and torch's
current stream, the decode step over a device pool, device-side cu_seqlens, autograd through the CUDA backward, and
the errors (mixed devices, float64, rules without a CUDA backward). Skipped without a GPU or without the CUDA part
of the extension (a build without nvcc)."""
import numpy as np
import pytest

import linea
from linea import _linea
from conformance import GRADIENT_TOLERANCE, cases, forward_tolerance, outputs, relative_error
from inputs import random_call

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not (torch.cuda.is_available() and _linea.has_cuda),
                                reason="needs a CUDA GPU and the extension's CUDA part")
CASES = cases()
POSITIONAL = {"linear_attn": "q k v", "simple_gla": "q k v", "gla": "q k v", "delta_rule": "q k v beta",
              "gated_delta_rule": "q k v g beta", "kda": "q k v g beta", "gdn2": "q k v g b w"}
TRUTH_OF = {"q": "dq_ref64", "k": "dk_ref64", "v": "dv_ref64", "g": "dg_ref64", "gk": "dg_ref64",
            "beta": "dbeta_ref64", "initial_state": "dh0_ref64"}


def on_gpu(x, dtype=None):
    t = torch.from_numpy(np.ascontiguousarray(x)).cuda()
    return t.to(dtype) if dtype is not None and t.is_floating_point() else t


def check(case, result, dtype, T):
    got = {k: (v.double().cpu().numpy() if torch.is_tensor(v) else v) for k, v in outputs(result, case).items()}
    bound = forward_tolerance(dtype, T)
    for name, truth in case.truths().items():
        err = relative_error(got[name], truth)
        assert err <= bound, f"{case.label}: {name} relative error {err:.3g} > {bound:g} ({dtype})"


def cuda_supported(case):
    # The CUDA backend's own limits (docs/usage.md, "The CUDA backend"): normalize with the CCQ read.
    return not (case.ccq and case.params.get("normalize"))


@pytest.mark.parametrize("form", ["chunk", "fused_recurrent"])
@pytest.mark.parametrize("case", [c for c in CASES if cuda_supported(c)], ids=lambda c: c.label)
def test_forms_float32_on_cuda(case, form):
    args, kw = case.call(form, convert=on_gpu)
    with torch.no_grad():
        result = getattr(linea, case.function_name(form))(*args, **kw)
    assert result[0].is_cuda and result[0].dtype == torch.float32 and result[0].device == args[0].device
    check(case, result, "float32", case.params["T"])


@pytest.mark.parametrize("case", [c for c in CASES if c.params.get("input_rounding") in ("bfloat16", "float16")
                                  and cuda_supported(c)], ids=lambda c: c.label)
def test_chunk_16bit_on_cuda(case):
    dtype = getattr(torch, case.params["input_rounding"])
    args, kw = case.call("chunk", convert=on_gpu)
    args = [a.to(dtype) for a in args]
    for name in ("g", "beta", "b", "w", "ccq_lambda", "ccq_log_decay"):
        if torch.is_tensor(kw.get(name)) and kw[name].is_floating_point():
            kw[name] = kw[name].to(dtype)
    with torch.no_grad():
        result = getattr(linea, case.function_name("chunk"))(*args, **kw)
    assert result[0].dtype == dtype
    check(case, result, case.params["input_rounding"], case.params["T"])


def test_runs_on_the_current_stream():
    """A call on a side stream is ordered with the work queued there before it (no host synchronisation)."""
    args, kw = random_call("gated_delta_rule", "chunk", np.float32, B=2, T=300, H=2, K=32, V=32, seed=3)
    host = linea.reference.chunk_gated_delta_rule(*args, **kw)[0]
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        q, k, v, g, beta = (on_gpu(a) for a in args)
        q = q * 1.0  # queued on s: the kernel must see it finished
        o = linea.chunk_gated_delta_rule(q, k, v, g, beta)[0]
        done = o.cpu()
    assert relative_error(done.numpy(), host) <= forward_tolerance("float32")


def test_decode_step_over_a_device_pool():
    B, H, K, V, T = 3, 2, 16, 8, 5
    args, kw = random_call("gated_delta_rule", "fused_recurrent", np.float32, B=B, T=T, H=H, K=K, V=V, seed=4)
    (q, k, v), g, beta = args, kw["g"], kw["beta"]
    want, ht = linea.reference.fused_recurrent_gated_delta_rule(q, k, v, g=g, beta=beta, output_final_state=True)
    pool = torch.zeros(B + 2, H, K, V, device="cuda")
    idx = torch.tensor([4, 0, 2], dtype=torch.int32, device="cuda")
    o = torch.empty(B, T, H, V, device="cuda")
    for t in range(T):
        step = [on_gpu(x[:, t:t + 1]) for x in (q, k, v, g, beta)]
        out, final = linea.fused_recurrent_gated_delta_rule(*step[:3], g=step[3], beta=step[4], initial_state=pool,
                                                           output_final_state=True, ssm_state_indices=idx)
        assert final is pool  # fla's convention: the final state only when asked for (then the pool, in place)
        o[:, t] = out[:, 0]
    assert relative_error(o.cpu().numpy(), want) <= forward_tolerance("float32")
    assert relative_error(pool[idx.long()].cpu().numpy(), ht) <= forward_tolerance("float32")


def test_device_cu_seqlens_int32():
    args, kw = random_call("kda", "chunk", np.float32, B=1, T=90, H=2, K=16, V=16, seed=5)
    cu = np.array([0, 17, 64, 90], np.int64)
    want, want_ht = linea.reference.chunk_kda(*args, cu_seqlens=cu, output_final_state=True)
    o, ht = linea.chunk_kda(*(on_gpu(a) for a in args), cu_seqlens=on_gpu(cu.astype(np.int32)),
                            output_final_state=True)
    assert ht.shape[0] == 3
    assert relative_error(o.cpu().numpy(), want) <= forward_tolerance("float32")
    assert relative_error(ht.cpu().numpy(), want_ht) <= forward_tolerance("float32")


def test_reference_takes_cuda_tensors():
    args, kw = random_call("delta_rule", "chunk", np.float32, seed=6)
    o, _ = linea.reference.chunk_delta_rule(*(on_gpu(a) for a in args))
    assert o.is_cuda and o.dtype == torch.float64
    assert relative_error(o.cpu().numpy(), linea.reference.chunk_delta_rule(*args)[0]) == 0


def test_mixed_devices_name_the_argument():
    args, kw = random_call("gated_delta_rule", "chunk", np.float32, seed=7)
    q, k, v, g, beta = (on_gpu(a) for a in args)
    with pytest.raises(ValueError, match="argument 'beta' is on cpu, but q is on cuda:0"):
        linea.chunk_gated_delta_rule(q, k, v, g, beta.cpu())


def test_float64_on_cuda_is_a_type_error():
    args, kw = random_call("gated_delta_rule", "chunk", np.float64, seed=8)
    with pytest.raises(TypeError, match="CUDA backend takes float32, bfloat16 or float16"):
        linea.chunk_gated_delta_rule(*(on_gpu(a) for a in args))


@pytest.mark.parametrize("case", [c for c in cases(gradients_only=True)
                                  if not c.params.get("normalize") and not c.params.get("g_gamma")],
                         ids=lambda c: c.label)
def test_gradient_cases_on_cuda(case):
    args, kw = case.call("chunk", convert=on_gpu)
    named = dict(zip(POSITIONAL[case.op].split(), args), **kw)
    leaves = {name: named[name].requires_grad_() for name in TRUTH_OF
              if torch.is_tensor(named.get(name)) and named[name].is_floating_point() and case.has(TRUTH_OF[name])}
    o, ht = getattr(linea, case.function_name("chunk"))(*args, **kw)[:2]
    loss = (o * on_gpu(case.array("do"))).sum() + (ht * on_gpu(case.array("dht"))).sum()
    loss.backward()
    for name, t in leaves.items():
        assert t.grad.is_cuda
        err = relative_error(t.grad.double().cpu().numpy(), case.array(TRUTH_OF[name]))
        assert err <= GRADIENT_TOLERANCE["float32"], f"{case.label}: d{name} relative error {err:.3g}"


@pytest.mark.parametrize("read", ["identity", "ccq_uniform", "ccq_decayed"])
@pytest.mark.parametrize("rule", ["linear_attn", "simple_gla", "gla", "delta_rule", "gated_delta_rule", "kda", "gdn2"])
def test_cuda_backward_matches_the_cpu_backward(rule, read):
    args, kw = random_call(rule, "chunk", np.float32, B=2, T=70, H=2, K=32, V=16, seed=9)
    if read != "identity":  # the CCQ read: λ is differentiable too
        kw = dict(kw, ccq_lambda=np.random.default_rng(3).uniform(0.1, 0.6, args[0].shape[:3]).astype(np.float32),
                  ccq_weighting=read.removeprefix("ccq_"))
    f = getattr(linea, f"chunk_{rule}")
    grads = []
    for dev in ("cpu", "cuda"):
        xs = [torch.from_numpy(a).to(dev).requires_grad_() for a in args]
        kx = {k: (torch.from_numpy(v).to(dev).requires_grad_() if isinstance(v, np.ndarray) else v)
              for k, v in kw.items()}
        if rule == "linear_attn":
            kx["normalize"] = False
        o = f(*xs, **kx)[0]
        (o.double() ** 2).sum().backward()
        grads.append([t.grad.double().cpu().numpy() for t in xs + [v for v in kx.values() if torch.is_tensor(v)]])
    for cpu, gpu in zip(*grads):
        assert relative_error(gpu, cpu) <= GRADIENT_TOLERANCE["float32"]


def test_normalize_gradients_on_cuda_equal_the_cpu_ones():
    # linear_attn with normalize=True (fla's default in chunk_linear_attn) has a CUDA backward
    # (backend/cuda/normalize_backward.hpp); positive q, k keep the denominators away from 0.
    args, kw = random_call("linear_attn", "chunk", np.float32, seed=10)
    args = [(np.abs(a) + 0.1).astype(a.dtype) if i < 2 else a for i, a in enumerate(args)]
    grads = []
    for dev in ("cpu", "cuda"):
        xs = [torch.from_numpy(a).to(dev).requires_grad_() for a in args]
        kx = {k: (torch.from_numpy(v).to(dev) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        o = linea.chunk_linear_attn(*xs, **dict(kx, normalize=True))[0]
        (o.double() ** 2).sum().backward()
        grads.append([t.grad.double().cpu().numpy() for t in xs])
    for cpu, gpu in zip(*grads):
        assert relative_error(gpu, cpu) <= GRADIENT_TOLERANCE["float32"]
