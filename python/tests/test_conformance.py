"""Every conformance case (fla's vectors and linea's) through every form, as a Python user calls it: the chunkwise
form (chunk_*), the recurrent form (fused_recurrent_*), the decode step (fused_recurrent_* with ssm_state_indices,
token by token) and the float64 oracle (linea.reference.*), within SPEC §5."""
import numpy as np
import pytest

import linea
from conformance import cases, conformance_dir, forward_tolerance, outputs, relative_error

CASES = cases()


def test_vectors_are_found():
    # As the C++ conformance tests: without the vectors this fails rather than passing vacuously.
    assert CASES, f"no conformance vectors under {conformance_dir()} (set LINEA_CONFORMANCE_DIR)"


def check(case, result, dtype, T):
    got = outputs(result, case)
    bound = forward_tolerance(dtype, T)
    for name, truth in case.truths().items():
        err = relative_error(got[name], truth)
        assert err <= bound, f"{case.label}: {name} relative error {err:.3g} > {bound:g} ({dtype})"


@pytest.mark.parametrize("form", ["chunk", "fused_recurrent"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_forms_float32(case, form):
    args, kw = case.call(form)
    result = getattr(linea, case.function_name(form))(*args, **kw)
    assert isinstance(result[0], np.ndarray) and result[0].dtype == np.float32
    check(case, result, "float32", case.params["T"])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_reference(case):
    args, kw = case.call("chunk")
    result = getattr(linea.reference, case.function_name("chunk"))(*args, **kw)
    assert result[0].dtype == np.float64
    # float32 inputs are exact in float64: the oracle meets the float64 bound.
    check(case, result, "float64", case.params["T"])


@pytest.mark.parametrize("case", [c for c in CASES if c.params.get("input_rounding") == "float16"],
                         ids=lambda c: c.label)
def test_chunk_float16(case):
    # These cases' inputs are stored already rounded to float16: the float16 call sees exactly the same values.
    args, kw = case.call("chunk", convert=lambda x: x.astype(np.float16) if x.dtype == np.float32 else x)
    for k in ("initial_state", "A_log", "dt_bias"):  # states and gate parameters stay float32
        if kw.get(k) is not None:
            kw[k] = kw[k].astype(np.float32)
    result = getattr(linea, case.function_name("chunk"))(*args, **kw)
    assert result[0].dtype == np.float16
    check(case, result, "float16", case.params["T"])


def step_cases():
    return [c for c in CASES if c.params.get("cu_seqlens") is None and not c.has("cu_seqlens")
            and not c.params.get("normalize")]


@pytest.mark.parametrize("case", step_cases(), ids=lambda c: c.label)
def test_decode_step(case):
    """The decode step token by token over a state pool (in place) reproduces the whole sequence."""
    args, kw = case.call("fused_recurrent")
    B, T = args[0].shape[:2]
    HV, V, K = args[2].shape[2], args[2].shape[3], args[0].shape[3]
    pool = np.zeros((B, HV, K, V), np.float32) if kw["initial_state"] is None else kw["initial_state"].copy()
    kw.update(initial_state=pool, ssm_state_indices=np.arange(B, dtype=np.int32))
    if case.ccq:
        C0 = kw.get("ccq_initial_state")
        kw["ccq_initial_state"] = tuple(np.zeros(s, np.float32) for s in ((B, HV, K, K), (B, HV, K), (B, HV))) \
            if C0 is None else tuple(s.copy() for s in C0)
    f = getattr(linea, case.function_name("fused_recurrent"))
    o = np.empty((B, T, HV, V), np.float32)
    for t in range(T):
        a = [x[:, t:t + 1] for x in args]
        k2 = {k: (v[:, t:t + 1] if k in ("g", "gk", "beta", "ccq_lambda", "ccq_log_decay") and v is not None else v)
              for k, v in kw.items()}
        result = f(*a, **k2)
        o[:, t] = result[0][:, 0]
        assert result[1] is pool  # the pool is the final state, updated in place
    stats = kw.get("ccq_initial_state")
    check(case, (o, pool, stats) if case.ccq else (o, pool), "float32", T)
