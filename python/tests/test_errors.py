"""Bad arguments raise ValueError (shapes, values, devices) or TypeError (dtypes, kinds) carrying linea's message,
before anything is written; never a crash."""
import numpy as np
import pytest

import linea
from inputs import random_call


def gdr(**changes):
    args, kw = random_call("gated_delta_rule", "chunk", np.float32)
    names = ["q", "k", "v", "g", "beta"]
    call = dict(zip(names, args), **kw)
    call.update(changes)
    return call


def test_shape_mismatch_names_the_argument_and_shapes():
    call = gdr()
    call["beta"] = call["beta"][:, :-1]
    with pytest.raises(ValueError, match=r"linea: argument 'beta' has shape \[2, 36, 2\]; expected \[B, T, HV\] = \[2, 37, 2\]"):
        linea.chunk_gated_delta_rule(**call)


def test_key_shape_mismatch():
    call = gdr()
    call["k"] = call["k"][..., :8]
    with pytest.raises(ValueError, match="argument 'k' has shape"):
        linea.fused_recurrent_gated_delta_rule(**call)


def test_wrong_rank():
    call = gdr()
    call["q"] = call["q"][0]
    with pytest.raises(ValueError, match="argument 'q' has shape"):
        linea.chunk_gated_delta_rule(**call)
    call = gdr()
    call["g"] = call["g"][..., None]
    with pytest.raises(ValueError, match="argument 'g' has 4 dimensions; expected 3"):
        linea.chunk_gated_delta_rule(**call)


def test_mixed_dtypes_are_a_type_error():
    call = gdr()
    call["k"] = call["k"].astype(np.float64)
    with pytest.raises(TypeError, match="argument 'k' has dtype float64; expected float32"):
        linea.chunk_gated_delta_rule(**call)


def test_mixed_dtypes_with_16_bit_q_are_a_type_error():
    # 16-bit inputs are widened to float32 on the CPU before linea sees them: a float32 k next to a float16 q was
    # accepted there (and refused on the GPU). Gates may be float32 next to 16-bit q, k, v (fla's mix).
    call = gdr()
    for name in ("q", "k", "v"):
        call[name] = call[name].astype(np.float16)
    call["k"] = call["k"].astype(np.float32)
    with pytest.raises(TypeError, match="argument 'k' has dtype float32; expected float16"):
        linea.chunk_gated_delta_rule(**call)
    call["k"] = call["k"].astype(np.float16)
    call["g"] = call["g"].astype(np.float64)
    with pytest.raises(TypeError, match="argument 'g' has dtype float64; expected float16 or float32"):
        linea.chunk_gated_delta_rule(**call)
    call["g"] = call["g"].astype(np.float32)  # float32 gates with float16 q, k, v: fla's mix, accepted
    o, _ = linea.chunk_gated_delta_rule(**call)
    assert o.dtype == np.float16


def test_unsupported_dtype():
    call = gdr()
    call["q"] = call["q"].astype(np.int32)
    with pytest.raises(TypeError, match="argument 'q' has dtype int32"):
        linea.chunk_gated_delta_rule(**call)


def test_not_an_array():
    call = gdr()
    call["q"] = call["q"].tolist()
    with pytest.raises(TypeError, match="argument 'q' is a list"):
        linea.chunk_gated_delta_rule(**call)


def test_missing_gate():
    call = gdr(g=None)
    with pytest.raises(ValueError, match="argument 'g' is missing"):
        linea.chunk_gated_delta_rule(**call)


def test_missing_values():
    # (q and k given as None were named by the bindings; v reached a dictionary lookup first: a KeyError)
    for call in (linea.chunk_gated_delta_rule, linea.fused_recurrent_gated_delta_rule,
                 linea.reference.chunk_gated_delta_rule):
        with pytest.raises(ValueError, match="argument 'v' is missing"):
            call(**gdr(v=None))


def test_initial_state_shape():
    call = gdr(initial_state=np.zeros((2, 2, 16, 7), np.float32))
    with pytest.raises(ValueError, match="argument 'initial_state' has shape"):
        linea.chunk_gated_delta_rule(**call)


def test_cu_seqlens_needs_batch_one_and_must_end_at_T():
    with pytest.raises(ValueError, match="cu_seqlens' needs B = 1"):
        linea.chunk_gated_delta_rule(**gdr(cu_seqlens=np.array([0, 37])))
    call = gdr()
    call = {k: (v[:1] if isinstance(v, np.ndarray) else v) for k, v in call.items()}
    with pytest.raises(ValueError, match="must end at T = 37"):
        linea.chunk_gated_delta_rule(**call, cu_seqlens=np.array([0, 10, 30]))


def test_state_indices_out_of_range():
    args, _ = random_call("kda", "fused_recurrent", np.float32, T=1)
    pool = np.zeros((2, 2, 16, 8), np.float32)
    with pytest.raises(ValueError, match=r"state_indices\[1\]' = 5 is outside"):
        linea.fused_recurrent_kda(*args, initial_state=pool, ssm_state_indices=np.array([0, 5]))


def test_decode_step_takes_one_token():
    args, _ = random_call("kda", "fused_recurrent", np.float32, T=3)
    pool = np.zeros((2, 2, 16, 8), np.float32)
    with pytest.raises(ValueError, match="one token per row"):
        linea.fused_recurrent_kda(*args, initial_state=pool, ssm_state_indices=np.array([0, 1]))


def test_fla_options_linea_lacks():
    args, kw = random_call("gla", "fused_recurrent", np.float32)
    with pytest.raises(ValueError, match="reverse=True is not supported"):
        linea.fused_recurrent_gla(*args, **kw, reverse=True)


def test_ccq_arguments_need_lambda():
    with pytest.raises(ValueError, match="need ccq_lambda"):
        linea.chunk_gated_delta_rule(**gdr(), output_ccq_state=True)


def test_uniform_ccq_takes_no_log_decay():
    call = gdr()
    lam = np.full(call["g"].shape, 0.1, np.float32)
    with pytest.raises(ValueError, match="ccq.log_decay"):
        linea.chunk_gated_delta_rule(**call, ccq_lambda=lam, ccq_log_decay=call["g"])


def test_bad_chunk_size():
    with pytest.raises(ValueError, match="chunk_size' = 48 is not supported"):
        linea.chunk_gated_delta_rule(**gdr(), chunk_size=48)


def test_nothing_written_on_error():
    """The decode step validates before it touches the pool."""
    args, _ = random_call("kda", "fused_recurrent", np.float32, T=1)
    pool = np.ones((2, 2, 16, 8), np.float32)
    bad_beta = args[4][:, :, :1]
    with pytest.raises(ValueError):
        linea.fused_recurrent_kda(*args[:4], bad_beta, initial_state=pool, ssm_state_indices=np.array([0, 1]))
    assert np.all(pool == 1)


def test_torch_errors():
    torch = pytest.importorskip("torch")
    args, kw = random_call("gated_delta_rule", "chunk", np.float32)
    q, k, v, g, beta = (torch.from_numpy(x) for x in args)
    with pytest.raises(TypeError, match="argument 'v' has dtype float64"):
        linea.chunk_gated_delta_rule(q, k, v.double(), g, beta)
    with pytest.raises(ValueError, match="argument 'beta' has shape"):
        linea.chunk_gated_delta_rule(q, k, v, g, beta[:, :3])
    if torch.cuda.is_available():  # a CPU call given one CUDA tensor (test_cuda.py has the CUDA calls)
        with pytest.raises(ValueError, match="argument 'beta' is on cuda:0, but q is on cpu"):
            linea.chunk_gated_delta_rule(q, k, v, g, beta.cuda())


def test_unknown_array_name():
    from linea import _linea

    with pytest.raises(ValueError, match="no argument is named 'qq'"):
        _linea.forward("gated_delta_rule", {"qq": np.zeros(1, np.float32)}, _linea.options())


def test_backward_gradient_overlapping_an_input():
    """The extension's backward (numpy arrays, as autograd calls it): a gradient over another array than its own
    input, or over its own input shifted by a token, is refused before anything is written."""
    from linea import _linea

    args, _ = random_call("gated_delta_rule", "chunk", np.float64, B=1, T=12)
    arrays = dict(zip(["q", "k", "v", "g", "beta"], args))
    arrays["d_o"] = np.ones(arrays["v"].shape)
    values = np.zeros((1, 13) + arrays["v"].shape[2:])
    values[:, :12] = arrays["v"]
    o = _linea.options()
    o.dtype = "float64"
    shifted = dict(arrays, v=values[:, :12], dv=values[:, 1:])
    with pytest.raises(ValueError, match="argument 'dv'.*overlaps argument 'v'"):
        _linea.backward("gated_delta_rule", shifted, o)
    assert np.all(values[:, :12] == arrays["v"])
    with pytest.raises(ValueError, match="argument 'dv'.*overlaps argument 'd_o'"):
        _linea.backward("gated_delta_rule", dict(arrays, dv=arrays["d_o"]), o)


# Session 13's probe of the package (helper): bad values that used to pass or fail with Python's own errors.
def test_state_index_outside_int32_is_an_error_not_a_wrapped_index():
    # 2**32 + 1 cast to int32 was 1: pool[1] was updated in silence
    args, _ = random_call("kda", "fused_recurrent", np.float32, T=1)
    pool = np.zeros((3, 2, 16, 8), np.float32)
    for bad in (2**32 + 1, 2**31, -(2**32) + 2):
        with pytest.raises(ValueError, match=f"argument 'state_indices' holds {bad}, outside int32's range"):
            linea.fused_recurrent_kda(*args, initial_state=pool, ssm_state_indices=np.array([bad, 0]))
    assert not pool.any()  # nothing written
    # int64 indices inside int32's range: the rows they name
    p64 = np.zeros((3, 2, 16, 8), np.float32)
    p32 = np.zeros((3, 2, 16, 8), np.float32)
    linea.fused_recurrent_kda(*args, initial_state=p64, ssm_state_indices=np.array([2, 0], np.int64))
    linea.fused_recurrent_kda(*args, initial_state=p32, ssm_state_indices=np.array([2, 0], np.int32))
    np.testing.assert_array_equal(p64, p32)
    assert p64[2].any() and p64[0].any() and not p64[1].any()


def test_empty_cu_seqlens_is_an_error():
    call = {k: (v[:1] if isinstance(v, np.ndarray) else v) for k, v in gdr().items()}
    for dtype in (np.int64, np.int32):
        for final in (False, True):
            with pytest.raises(ValueError, match="argument 'cu_seqlens' has 0 entries"):
                linea.chunk_gated_delta_rule(**call, cu_seqlens=np.array([], dtype), output_final_state=final)


def test_cu_seqlens_of_two_dimensions_or_no_integers_is_an_error():
    call = {k: (v[:1] if isinstance(v, np.ndarray) else v) for k, v in gdr().items()}
    T = call["q"].shape[1]
    with pytest.raises(ValueError, match=r"argument 'cu_seqlens' has shape \[1, 2\]; expected one dimension"):
        linea.chunk_gated_delta_rule(**call, cu_seqlens=np.array([[0, T]], np.int32))
    for dtype in (np.float32, np.bool_):  # (the hint is an index array's, not the inputs' "dtype of q")
        with pytest.raises(TypeError, match=r"argument 'cu_seqlens' has dtype .*; expected integers \(int64 or int32\)"):
            linea.chunk_gated_delta_rule(**call, cu_seqlens=np.array([0, T], dtype))
    # the extension itself (what the package hands it is already checked): an index array's dtypes
    from linea import _linea
    from linea._core import options
    with pytest.raises(TypeError, match=r"argument 'cu_seqlens' has dtype float32; expected int64 \(index arrays: "
                                        r"cu_seqlens int32 or int64"):
        _linea.forward("gated_delta_rule", dict({n: call[n] for n in ("q", "k", "v", "g", "beta")}, cu_seqlens=np.array([0, T], np.float32),
                                                o=np.empty_like(call["v"])), options("chunkwise").native("cpu", "float32"))


def test_complex_states_and_gate_parameters_are_type_errors():
    call = gdr()
    h0 = np.zeros((2, 2, 16, 8), np.complex64) + 1j
    with pytest.raises(TypeError, match="argument 'initial_state' has dtype complex64"):
        linea.chunk_gated_delta_rule(**call, initial_state=h0)
    args, _ = random_call("kda", "chunk", np.float32)
    with pytest.raises(TypeError, match="argument 'gate.A_log' has dtype complex64"):
        linea.chunk_kda(*args, use_gate_in_kernel=True, A_log=np.array([0.1 + 1j, 0.2], np.complex64))


def test_missing_or_listed_arrays_name_the_argument():
    call = gdr()
    q, k, v, beta = call["q"], call["k"], call["v"], call["beta"]
    with pytest.raises(TypeError, match="argument 'v' is not an array"):
        linea.fused_recurrent_delta_rule(q, k, None)
    with pytest.raises(TypeError, match="argument 'v' is not an array"):
        linea.fused_recurrent_delta_rule(q, k, v.tolist())
    with pytest.raises(TypeError, match="argument 'q' is not an array"):
        linea.chunk_simple_gla(q.tolist(), k, v, g_gamma=np.full(2, -0.1, np.float32))
    # 16-bit q widened on the CPU: a listed k is named too
    h = {n: call[n].astype(np.float16) for n in ("q", "k", "v")}
    with pytest.raises(TypeError, match="argument 'k' is not an array"):
        linea.chunk_gated_delta_rule(h["q"], h["k"].tolist(), h["v"], call["g"], beta)


def test_a_tuple_is_not_an_array_whatever_its_items():
    # the package's torch descriptions are tuples too (_arrays.for_kernel), but carry the extension's private tag:
    # a caller's tuple of an address, shape, strides, dtype code and device was once read as an array at that address
    call = gdr()
    k = call["k"]
    address = k.__array_interface__["data"][0]
    strides = tuple(s // k.itemsize for s in k.strides)
    for fake in ((address, k.shape, strides, 0, -1), (object(), address, k.shape, strides, 0, -1),
                 (4096, (2, 12, 2, 8), (384, 32, 8, 1), 0, -1)):
        with pytest.raises(TypeError, match="argument 'k' is not an array"):
            linea.chunk_gated_delta_rule(**{**call, "k": fake})
    with pytest.raises(TypeError, match="argument 'beta' is not an array"):
        linea.fused_recurrent_gated_delta_rule(**{**call, "beta": (4096, call["beta"].shape, (1, 1, 1), 0, -1)})


def test_big_endian_arrays_are_named_as_such():
    call = gdr()
    with pytest.raises(TypeError, match="argument 'k' is big-endian; linea takes arrays in the machine's byte order"):
        linea.chunk_gated_delta_rule(**{**call, "k": call["k"].astype(">f4")})


def _off_alignment(a):
    """The same values in an array that starts one byte past its elements' alignment (a view at a byte offset)."""
    raw = np.zeros(a.nbytes + 1, np.uint8)
    b = raw[1:].view(a.dtype).reshape(a.shape)
    b[...] = a
    assert not b.flags.aligned
    return b


def test_arrays_off_their_elements_alignment():
    # linea reads arrays in place through typed pointers: a misaligned float array is refused, naming it (before,
    # undefined behaviour on the CPU), and a misaligned index array is only read, so it is copied
    call = gdr()
    with pytest.raises(ValueError, match=r"argument 'k' \(shape \[2, 37, 2, 16\]\) starts at address .*alignment"):
        linea.chunk_gated_delta_rule(**{**call, "k": _off_alignment(call["k"])})
    with pytest.raises(ValueError, match="argument 'beta' .*alignment"):
        linea.fused_recurrent_gated_delta_rule(**{**call, "beta": _off_alignment(call["beta"])})
    q, k, v, g, beta = (call[n][:1] for n in ("q", "k", "v", "g", "beta"))
    cu = np.array([0, 20, 37], np.int64)
    o_ref, s_ref = linea.chunk_gated_delta_rule(q, k, v, g, beta, cu_seqlens=cu, output_final_state=True)
    o, s = linea.chunk_gated_delta_rule(q, k, v, g, beta, cu_seqlens=_off_alignment(cu), output_final_state=True)
    np.testing.assert_array_equal(o, o_ref)
    np.testing.assert_array_equal(s, s_ref)


def test_an_output_too_large_to_allocate_is_named():
    # K = 2**22 through stride-0 keys and queries (a few bytes of input): the CCQ statistics [N, HV, K, K] are 2**44
    # floats each; numpy's own error named neither the output nor the inputs
    call = gdr()
    B, T, H, _ = call["q"].shape
    K = 2**22
    wide = {n: np.broadcast_to(np.float32(0.01), (B, T, H, K)) for n in ("q", "k")}
    lam = np.full(call["beta"].shape, 0.1, np.float32)
    with pytest.raises(MemoryError, match=r"linea: the output '(final_state|ccq\.C)' of shape \[2, 2, 4194304, .*"
                                          r"q has shape \[2, 37, 2, 4194304\]\) cannot be allocated"):
        linea.chunk_gated_delta_rule(**{**call, **wide}, ccq_lambda=lam, output_final_state=True, output_ccq_state=True)


def test_g_gamma_is_one_log_decay_per_value_head():
    call = gdr()
    q, k, v = call["q"], call["k"], call["v"]  # HV = 2
    for shape in ((1,), (3,), (37, 2)):
        with pytest.raises(ValueError, match=r"argument 'g_gamma' has shape .*; expected \[HV\] = \[2\]"):
            linea.chunk_simple_gla(q, k, v, g_gamma=np.full(shape, -0.1, np.float32))
    with pytest.raises(TypeError, match="argument 'g_gamma' has dtype int32"):
        linea.chunk_simple_gla(q, k, v, g_gamma=np.zeros(2, np.int32))


def test_scalar_options_of_the_wrong_kind_name_themselves():
    call = gdr()
    # numbers of other types are the same option (what is accepted does not depend on what is cached)
    o_ref, _ = linea.chunk_gated_delta_rule(**call, scale=0.5, chunk_size=32)
    for scale, chunk in ((np.float32(0.5), np.int64(32)), (np.array(0.5), 32.0), (0.5, np.int32(32))):
        o, _ = linea.chunk_gated_delta_rule(**call, scale=scale, chunk_size=chunk)
        np.testing.assert_array_equal(o, o_ref)
    # (the Python path keeps options by value: 1's, once kept, must not take a truth value or a complex 1 equal to it;
    # g_gamma takes that path, python/src/fla_call.hpp)
    gamma = np.full(call["v"].shape[2], -0.1, np.float32)
    linea.chunk_simple_gla(call["q"], call["k"], call["v"], g_gamma=gamma, scale=1.0)
    for scale in (True, np.bool_(True), 1 + 0j, np.complex64(1)):
        with pytest.raises(TypeError, match="argument 'scale'"):
            linea.chunk_simple_gla(call["q"], call["k"], call["v"], g_gamma=gamma, scale=scale)
    for scale in ([0.5], 0.5 + 1j, np.complex64(0.5), "0.5", True, np.bool_(True), np.array(True)):
        with pytest.raises(TypeError, match="argument 'scale'"):
            linea.chunk_gated_delta_rule(**call, scale=scale)
    for chunk in (None, "32", 32.7, True):
        with pytest.raises(TypeError, match="argument 'chunk_size'"):
            linea.chunk_gated_delta_rule(**call, chunk_size=chunk)
    args, _ = random_call("kda", "chunk", np.float32)
    with pytest.raises(TypeError, match="argument 'lower_bound'"):
        linea.chunk_kda(*args, use_gate_in_kernel=True, A_log=np.zeros(2, np.float32), lower_bound="x")
    # a positive bound would make every gate a growth factor exp(g) > 1 (fla uses -5): the library refuses it
    with pytest.raises(ValueError, match="argument 'gate.lower_bound' = 5 is positive"):
        linea.chunk_kda(*args, use_gate_in_kernel=True, A_log=np.zeros(2, np.float32), lower_bound=5.0)


def test_thread_counts_are_checked():
    before = linea.get_num_threads()
    try:
        for bad in (2**32 + 1, 2**31, -1):
            with pytest.raises(ValueError, match="the thread count must be"):
                linea.set_num_threads(bad)
        for bad in (None, float("nan"), 2.5):
            with pytest.raises(TypeError, match="the thread count must be an integer"):
                linea.set_num_threads(bad)
        assert linea.get_num_threads() == before
    finally:
        linea.set_num_threads(before)


def test_unknown_keyword_is_named():
    with pytest.raises(TypeError, match=r"gated_delta_rule \(chunkwise form\): unexpected keyword argument 'initial_stat'"):
        linea.chunk_gated_delta_rule(**gdr(), initial_stat=np.zeros((2, 2, 16, 8), np.float32))


def test_tuple_states_are_checked():
    args, _ = random_call("linear_attn", "chunk", np.float32)
    h = np.zeros((2, 2, 16, 8), np.float32)
    with pytest.raises(ValueError, match="argument 'initial_state' is a tuple"):
        linea.chunk_linear_attn(*args[:3], normalize=False, initial_state=(h, None))
    call = gdr()
    lam = np.full(call["beta"].shape, 0.5, np.float32)
    with pytest.raises(ValueError, match="argument 'ccq_initial_state' must be the statistics"):
        linea.chunk_gated_delta_rule(**call, ccq_lambda=lam, ccq_initial_state=(np.zeros((2, 2, 16, 16)), np.zeros((2, 2, 16))))


def test_verify_refuses_outputs_of_another_shape():
    from linea import verify
    with pytest.raises(ValueError, match="an output has shape"):
        verify.relative_error(np.zeros((2, 3)), np.zeros((3,)))


def test_state_v_first_shape_error_is_in_the_callers_layout():
    call = gdr()  # K = 16, V = 8, HV = 2
    with pytest.raises(ValueError, match=r"'initial_state' has shape \[2, 2, 8, 15\]; expected \[N, HV, V, K\] = \[N, 2, 8, 16\]"):
        linea.chunk_gated_delta_rule(**call, initial_state=np.zeros((2, 2, 8, 15), np.float32), state_v_first=True)


def test_extension_backward_refuses_unknown_backend_and_form():
    from linea import _linea
    args, _ = random_call("gated_delta_rule", "chunk", np.float32, B=1, T=12)
    arrays = dict(zip(["q", "k", "v", "g", "beta"], args))
    arrays["d_o"] = np.ones(arrays["v"].shape, np.float32)
    arrays["dq"] = np.full(arrays["q"].shape, np.nan, np.float32)
    for field, value in (("backend", "tpu"), ("form", "sideways")):
        o = _linea.options()
        o.dtype = "float32"
        setattr(o, field, value)
        with pytest.raises(ValueError, match=f"{field} '{value}'"):
            _linea.backward("gated_delta_rule", arrays, o)
        assert np.isnan(arrays["dq"]).all()  # nothing written
    # the decode step has no backward (was accepted and ran the recurrent one, ignoring the step's state pool)
    for backend in ("cpu", "reference", "cuda"):
        o = _linea.options()
        o.dtype, o.form, o.backend = "float32", "step", backend
        with pytest.raises(ValueError, match="the decode step .* has no backward"):
            _linea.backward("gated_delta_rule", arrays, o)
        assert np.isnan(arrays["dq"]).all()


# Session 14's findings (helper): bad inputs that gave a silent wrong answer or named the wrong thing.
def masked(x):
    """x as a numpy masked array hiding its first element (what a kernel reading .data would not see)."""
    mask = np.zeros(np.shape(x), bool)
    mask.flat[0] = True
    return np.ma.masked_array(x, mask=mask)


def test_masked_arrays_are_refused_naming_the_argument():
    # A masked array is an ndarray: its data were read as any other and its mask ignored (a silent wrong answer).
    def refused(name, f, *args, **kw):
        with pytest.raises(TypeError, match=f"argument '{name}' is a numpy masked array"):
            f(*args, **kw)

    call = gdr(initial_state=np.zeros((2, 2, 16, 8), np.float32))
    for name in ("q", "k", "v", "g", "beta", "initial_state"):
        for f in (linea.chunk_gated_delta_rule, linea.fused_recurrent_gated_delta_rule,
                  linea.reference.chunk_gated_delta_rule):
            refused(name, f, **dict(call, **{name: masked(call[name])}))
    packed = {k: (v[:1] if isinstance(v, np.ndarray) else v) for k, v in gdr().items()}
    refused("cu_seqlens", linea.chunk_gated_delta_rule, **packed, cu_seqlens=masked(np.array([0, 10, 37])))
    refused("ccq.lambda", linea.chunk_gated_delta_rule, **call, ccq_lambda=masked(np.full((2, 37, 2), 0.1, np.float32)))
    q, k, v = call["q"], call["k"], call["v"]
    refused("g_gamma", linea.chunk_simple_gla, q, k, v, g_gamma=masked(np.full(2, -0.1, np.float32)))
    args, _ = random_call("kda", "chunk", np.float32)
    refused("gate.A_log", linea.chunk_kda, *args, use_gate_in_kernel=True, A_log=masked(np.zeros(2, np.float32)))
    # the decode step: its pool and its indices (the pool is not written)
    args, _ = random_call("kda", "fused_recurrent", np.float32, T=1)
    pool = masked(np.ones((2, 2, 16, 8), np.float32))
    refused("initial_state", linea.fused_recurrent_kda, *args, initial_state=pool,
            ssm_state_indices=np.array([0, 1], np.int32))
    assert np.all(pool.data == 1)
    refused("state_indices", linea.fused_recurrent_kda, *args, initial_state=np.zeros((2, 2, 16, 8), np.float32),
            ssm_state_indices=masked(np.array([0, 1], np.int32)))


def test_reference_refuses_the_decode_step_before_reading_dtypes():
    # The extension's refusal came after its dtype checks: a float32 pool (the state type of float32 inputs, not
    # the reference's float64) was reported as a dtype error, hiding that the reference has no step at all.
    args, _ = random_call("kda", "fused_recurrent", np.float32, T=1)
    for dtype in (np.float32, np.float16, np.float64, np.int32):
        pool = np.zeros((2, 2, 16, 8), dtype)
        with pytest.raises(ValueError, match=r"the float64 reference has no decode step \(ssm_state_indices\); "
                                             r"the step runs on the cpu backend: linea.fused_recurrent_kda"):
            linea.reference.fused_recurrent_kda(*[a.astype(dtype) for a in args], initial_state=pool,
                                                ssm_state_indices=np.array([0, 1]))
    with pytest.raises(ValueError, match="no decode step"):  # (chunk_*: the step's function is named)
        linea.reference.chunk_kda(*args, initial_state=pool, ssm_state_indices=np.array([0, 1]))


@pytest.mark.parametrize("path", ["C++", "Python"])
def test_decode_pool_errors_name_initial_state(path, monkeypatch):
    # The pool is passed to linea as both initial_state and final_state (updated in place); linea's checks of an
    # output named 'final_state', an argument the caller never passed.
    from linea import _ops

    real, seen = _ops._fast, []
    monkeypatch.setattr(_ops, "_fast", (lambda *a: seen.append(1) or real(*a)) if path == "C++" else (lambda *a: None))
    args, _ = random_call("kda", "fused_recurrent", np.float32, T=1)
    read_only = np.zeros((2, 2, 16, 8), np.float32)
    read_only.flags.writeable = False
    big = np.zeros(2 * 2 * 16 * 8, np.float32)
    rows_overlap = np.lib.stride_tricks.as_strided(big, (2, 2, 16, 8), (4 * 8, 4 * 16 * 8, 4 * 8, 4))
    broadcast = np.broadcast_to(np.zeros((1, 2, 16, 8), np.float32), (2, 2, 16, 8))
    for pool, what in ((read_only, "is read-only"), (broadcast, "is read-only"),
                       (rows_overlap, "may put two positions on one element")):
        with pytest.raises(ValueError, match=f"argument 'initial_state' (has .* )?{what}") as e:
            linea.fused_recurrent_kda(*args, initial_state=pool, ssm_state_indices=np.array([0, 1], np.int32))
        assert "final_state" not in str(e.value)
    assert bool(seen) == (path == "C++")  # (the C++ path raised these itself)
    # the CCQ statistics pool (Python path only): ccq.C0, m0, z0 as given, not the outputs ccq.C, m, z
    stats = [np.zeros(s, np.float32) for s in ((2, 2, 16, 16), (2, 2, 16), (2, 2))]
    stats[0].flags.writeable = False
    with pytest.raises(ValueError, match="argument 'ccq.C0' is read-only"):
        linea.fused_recurrent_kda(*args, initial_state=np.zeros((2, 2, 16, 8), np.float32),
                                  ssm_state_indices=np.array([0, 1], np.int32),
                                  ccq_lambda=np.zeros(args[4].shape, np.float32), ccq_initial_state=tuple(stats))
