"""The C++ path of a public call (python/src/fla_call.hpp, `_linea.fla_forward`) gives what the Python path gives,
bit for bit, and takes the calls it is meant to take: every other call falls back to the Python path."""
import numpy as np
import pytest

import linea
from linea import _ops
from inputs import RULES, random_call


@pytest.fixture
def fast_calls(monkeypatch):
    """Counts the calls the C++ path took (returned a result for) and declined (returned None)."""
    seen = {"took": 0, "declined": 0}
    real = _ops._fast

    def counted(*args):
        r = real(*args)
        seen["took" if r is not None else "declined"] += 1
        return r

    monkeypatch.setattr(_ops, "_fast", counted)
    return seen


def python_path(monkeypatch):
    monkeypatch.setattr(_ops, "_fast", lambda *args: None)


def equal(a, b):
    if a is None or b is None:
        assert a is None and b is None
        return
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert a.dtype == b.dtype and type(a) is type(b)


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("form", ["chunk", "fused_recurrent"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("final", [False, True])
def test_same_result_as_the_python_path(rule, form, dtype, final, monkeypatch, fast_calls):
    f = getattr(linea, f"{form}_{rule}")
    args, kw = random_call(rule, form, dtype)
    kw["output_final_state"] = final
    o, ht = f(*args, **kw)
    assert fast_calls["took"] == 1
    python_path(monkeypatch)
    o2, ht2 = f(*args, **kw)
    equal(o, o2), equal(ht, ht2)


def test_torch_cpu_same_result_and_kind(monkeypatch, fast_calls):
    torch = pytest.importorskip("torch")
    args, kw = random_call("gated_delta_rule", "chunk", np.float32)
    t = [torch.from_numpy(a) for a in args]
    o, ht = linea.chunk_gated_delta_rule(*t, output_final_state=True, scale=0.5)
    assert fast_calls["took"] == 1 and isinstance(o, torch.Tensor) and o.dtype == torch.float32
    assert ht.dtype == torch.float32 and tuple(ht.shape) == (2, 2, 16, 8)
    python_path(monkeypatch)
    o2, ht2 = linea.chunk_gated_delta_rule(*t, output_final_state=True, scale=0.5)
    assert torch.equal(o, o2) and torch.equal(ht, ht2)


def test_autograd_takes_the_python_path(fast_calls):
    torch = pytest.importorskip("torch")
    args, kw = random_call("delta_rule", "chunk", np.float64)
    t = [torch.from_numpy(a).requires_grad_() for a in args]
    o, _ = linea.chunk_delta_rule(*t)
    assert o.grad_fn is not None and fast_calls["took"] == 0
    with torch.no_grad():  # grad mode off: no autograd, so the C++ path
        o, _ = linea.chunk_delta_rule(*t)
    assert o.grad_fn is None and fast_calls["took"] == 1


def test_decode_step_and_packed_sequences(monkeypatch, fast_calls):
    args, kw = random_call("gated_delta_rule", "fused_recurrent", np.float32, B=3, T=1)
    pool = np.random.default_rng(1).standard_normal((5, 2, 16, 8)).astype(np.float32)
    idx = np.array([4, -1, 0], np.int32)
    p1, p2 = pool.copy(), pool.copy()
    o, ht = linea.fused_recurrent_gated_delta_rule(*args, **kw, initial_state=p1, ssm_state_indices=idx,
                                                   output_final_state=True)
    assert ht is p1 and fast_calls["took"] == 1
    python_path(monkeypatch)
    o2, _ = linea.fused_recurrent_gated_delta_rule(*args, **kw, initial_state=p2, ssm_state_indices=idx)
    equal(o, o2)
    np.testing.assert_array_equal(p1, p2)
    assert not np.array_equal(p1, pool)  # updated in place


def test_packed_sequences(monkeypatch, fast_calls):
    args, kw = random_call("kda", "chunk", np.float32, B=1, T=40)
    cu = np.array([0, 15, 40], np.int64)
    o, ht = linea.chunk_kda(*args, **kw, cu_seqlens=cu, output_final_state=True)
    assert fast_calls["took"] == 1 and ht.shape == (2, 2, 16, 8)
    python_path(monkeypatch)
    o2, ht2 = linea.chunk_kda(*args, **kw, cu_seqlens=cu, output_final_state=True)
    equal(o, o2), equal(ht, ht2)


def test_torch_cpu_strided_inputs(fast_calls):
    """Strided torch tensors on the C++ path (fla_call.hpp reads a contiguous tensor's strides from its shape and
    the others through stride()): a head-first tensor seen [B, T, H, K], a gate broadcast with stride 0 and a
    size-1 dimension with an odd stride give what their dense copies give."""
    torch = pytest.importorskip("torch")
    args, kw = random_call("gated_delta_rule", "chunk", np.float32)
    q, k, v, g, beta = (torch.from_numpy(a) for a in args)
    q_strided = q.transpose(1, 2).contiguous().transpose(1, 2)  # [B, H, T, K] memory
    g_row = g[:, :, :1].contiguous()
    g_broadcast = g_row.expand(g.shape)  # stride 0 over the heads
    beta_odd = beta[:1].as_strided((1,) + tuple(beta.shape[1:]), (12345,) + beta[:1].stride()[1:])
    assert not q_strided.is_contiguous() and g_broadcast.stride(2) == 0 and beta_odd.is_contiguous()
    k1 = k[:1].contiguous()
    o, ht = linea.chunk_gated_delta_rule(q_strided[:1], k1, v[:1], g_broadcast[:1], beta_odd,
                                         output_final_state=True)
    assert fast_calls["took"] == 1
    dense = [x.contiguous() for x in (q_strided[:1], v[:1], g_broadcast[:1])]
    beta_dense = torch.empty(beta_odd.shape).copy_(beta_odd)  # (.contiguous() keeps the odd stride)
    o2, ht2 = linea.chunk_gated_delta_rule(dense[0], k1, dense[1], dense[2], beta_dense, output_final_state=True)
    assert torch.equal(o, o2) and torch.equal(ht, ht2) and fast_calls["took"] == 2


def test_what_the_python_path_keeps(fast_calls):
    """Widening (float16 on the CPU), a list index array and a legacy keyword are declined, not refused."""
    args, kw = random_call("gated_delta_rule", "chunk", np.float16)
    o, _ = linea.chunk_gated_delta_rule(*args, **kw)
    assert o.dtype == np.float16
    args, kw = random_call("gated_delta_rule", "chunk", np.float32, B=1, T=40)
    linea.chunk_gated_delta_rule(*args, **kw, cu_seqlens=[0, 15, 40])
    assert fast_calls["took"] == 0 and fast_calls["declined"] == 2


def test_lazily_negated_tensor_is_negated(fast_calls):
    """torch's neg view (its memory un-negated, the sign a flag) is declined here and materialised by the Python
    path: the result is that of the negated values."""
    torch = pytest.importorskip("torch")
    args, kw = random_call("kda", "chunk", np.float64)
    t = [torch.from_numpy(a) for a in args]
    o_view, _ = linea.chunk_kda(torch._neg_view(t[0]), *t[1:])
    o_neg, _ = linea.chunk_kda(-t[0], *t[1:])
    assert torch.equal(o_view, o_neg) and fast_calls["took"] == 1  # only the second call
