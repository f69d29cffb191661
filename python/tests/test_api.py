"""fla's API as a fla user meets it: names, argument order and defaults, return values, array kinds and dtypes,
fla's options (g_gamma, GVA, packed sequences, in-kernel gates), and the decode step's state pool."""
import inspect

import numpy as np
import pytest

import linea
from conformance import forward_tolerance, relative_error
from inputs import RULES, random_call

# fla's signatures at bc3b101 (fla/ops/<op>/chunk.py, fused_recurrent.py): linea's take the same parameters in the
# same order with the same defaults, and may add its own keyword arguments after them.
FLA = {
    "chunk_linear_attn": "q k v scale=None initial_state=None output_final_state=False normalize=True cu_seqlens=None",
    "fused_recurrent_linear_attn": "q k v scale=None initial_state=None output_final_state=False reverse=False "
                                   "normalize=False cu_seqlens=None",
    "chunk_simple_gla": "q k v g=None g_gamma=None scale=None initial_state=None output_final_state=False "
                        "state_v_first=False cu_seqlens=None cu_seqlens_cpu=None",
    "fused_recurrent_simple_gla": "q k v g=None g_gamma=None scale=None initial_state=None output_final_state=False "
                                  "reverse=False state_v_first=False cu_seqlens=None",
    "chunk_gla": "q k v g scale=None initial_state=None output_final_state=False state_v_first=False "
                 "cu_seqlens=None cu_seqlens_cpu=None",
    "fused_recurrent_gla": "q k v gk=None gv=None scale=None initial_state=None output_final_state=False "
                           "reverse=False state_v_first=False cu_seqlens=None",
    "chunk_delta_rule": "q k v beta scale=None initial_state=None output_final_state=False "
                        "use_qk_l2norm_in_kernel=False cu_seqlens=None cu_seqlens_cpu=None",
    "fused_recurrent_delta_rule": "q k v beta=None scale=None initial_state=None output_final_state=False "
                                  "use_qk_l2norm_in_kernel=False cu_seqlens=None",
    "chunk_gated_delta_rule": "q k v g beta scale=None initial_state=None output_final_state=False "
                              "use_qk_l2norm_in_kernel=False use_beta_sigmoid_in_kernel=False allow_neg_eigval=False "
                              "state_v_first=False cu_seqlens=None cu_seqlens_cpu=None chunk_indices=None "
                              "cp_context=None",
    "fused_recurrent_gated_delta_rule": "q k v g=None gk=None gv=None beta=None scale=None initial_state=None "
                                        "output_final_state=False use_qk_l2norm_in_kernel=False "
                                        "use_gate_in_kernel=False A_log=None dt_bias=None "
                                        "use_beta_sigmoid_in_kernel=False allow_neg_eigval=False state_v_first=False "
                                        "cu_seqlens=None",
    "chunk_kda": "q k v g beta scale=None initial_state=None output_final_state=False use_qk_l2norm_in_kernel=False "
                 "use_gate_in_kernel=False use_beta_sigmoid_in_kernel=False allow_neg_eigval=False safe_gate=False "
                 "lower_bound=None disable_recompute=False return_intermediate_states=False state_v_first=False "
                 "cu_seqlens=None cu_seqlens_cpu=None cp_context=None",
    "fused_recurrent_kda": "q k v g beta A_log=None dt_bias=None scale=None initial_state=None "
                           "output_final_state=False use_qk_l2norm_in_kernel=False use_gate_in_kernel=False "
                           "use_beta_sigmoid_in_kernel=False allow_neg_eigval=False lower_bound=None "
                           "state_v_first=False cu_seqlens=None",
    "chunk_gdn2": "q k v g b w scale=None initial_state=None output_final_state=False use_qk_l2norm_in_kernel=False "
                  "use_gate_in_kernel=False cu_seqlens=None cu_seqlens_cpu=None safe_gate=False lower_bound=None "
                  "disable_recompute=False return_intermediate_states=False state_v_first=False",
    "fused_recurrent_gdn2": "q k v g b w A_log=None dt_bias=None scale=None initial_state=None "
                            "output_final_state=False use_qk_l2norm_in_kernel=False use_gate_in_kernel=False "
                            "lower_bound=None state_v_first=False cu_seqlens=None",
}


@pytest.mark.parametrize("name", sorted(FLA))
@pytest.mark.parametrize("module", [linea, linea.reference], ids=["linea", "reference"])
def test_fla_signature(module, name):
    params = list(inspect.signature(getattr(module, name)).parameters.values())
    ours = []
    for p in params[:len(FLA[name].split())]:
        ours.append(p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}")
    assert " ".join(ours) == FLA[name]


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("form", ["chunk", "fused_recurrent"])
def test_returns_like_fla(rule, form):
    f = getattr(linea, f"{form}_{rule}")
    args, kw = random_call(rule, form, np.float32)
    o, ht = f(*args, **kw)
    assert ht is None and isinstance(o, np.ndarray) and o.dtype == np.float32 and o.shape == args[2].shape
    o2, ht = f(*args, **kw, output_final_state=True)
    B, HV, K, V = args[0].shape[0], args[2].shape[2], args[0].shape[3], args[2].shape[3]
    assert ht.dtype == np.float32 and ht.shape == (B, HV, K, V)
    np.testing.assert_array_equal(o, o2)


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_dtypes_against_reference(rule, dtype):
    """Each storage type through the chunkwise form against the float64 oracle on the same (rounded) inputs."""
    if dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        np_dtype = ml_dtypes.bfloat16
    else:
        np_dtype = np.dtype(dtype)
    args, kw = random_call(rule, "chunk", np_dtype, T=70)
    o, ht = getattr(linea, f"chunk_{rule}")(*args, **kw, output_final_state=True)
    assert o.dtype == np_dtype and ht.dtype == (np.float64 if dtype == "float64" else np.float32)
    o64, ht64 = getattr(linea.reference, f"chunk_{rule}")(*args, **kw, output_final_state=True)
    assert o64.dtype == np.float64
    bound = forward_tolerance(dtype)
    assert relative_error(o.astype(np.float64), o64) <= bound
    assert relative_error(ht, ht64) <= bound


def test_chunk_and_recurrent_agree_with_gva_and_packed_sequences():
    args, kw = random_call("kda", "chunk", np.float32, T=90, H=2, HV=4)
    q, k, v, g, beta = args
    cu = np.array([0, 10, 55, 90], np.int64)
    flat = [x[:1] for x in args]  # B = 1 for packed sequences
    h0 = np.random.default_rng(1).standard_normal((3, 4, q.shape[3], v.shape[3])).astype(np.float32)
    oc, hc = linea.chunk_kda(*flat, initial_state=h0, output_final_state=True, cu_seqlens=cu)
    orr, hr = linea.fused_recurrent_kda(*flat, initial_state=h0, output_final_state=True, cu_seqlens=cu)
    o64, h64 = linea.reference.chunk_kda(*flat, initial_state=h0, output_final_state=True, cu_seqlens=cu)
    assert hc.shape == (3, 4, q.shape[3], v.shape[3])
    for o, h in ((oc, hc), (orr, hr)):
        assert relative_error(o, o64) <= 1e-5 and relative_error(h, h64) <= 1e-5


def test_g_gamma_is_a_constant_g():
    args, kw = random_call("simple_gla", "chunk", np.float32)
    q, k, v = args
    gamma = -np.linspace(0.05, 0.5, v.shape[2]).astype(np.float32)
    g = np.broadcast_to(gamma, v.shape[:3]).copy()
    o1, h1 = linea.chunk_simple_gla(q, k, v, g_gamma=gamma, output_final_state=True)
    o2, h2 = linea.chunk_simple_gla(q, k, v, g=g, output_final_state=True)
    np.testing.assert_allclose(o1, o2, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h1, h2, rtol=1e-6, atol=1e-6)


def test_strided_inputs_need_no_copy():
    """A head-first tensor seen in fla's layout (a transposed view) gives the contiguous result."""
    args, kw = random_call("gated_delta_rule", "chunk", np.float32)
    q = args[0]
    q_hf = np.ascontiguousarray(q.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)  # same values, other strides
    assert not q_hf.flags.c_contiguous
    o1, _ = linea.chunk_gated_delta_rule(*args, **kw)
    o2, _ = linea.chunk_gated_delta_rule(q_hf, *args[1:], **kw)
    np.testing.assert_array_equal(o1, o2)


def test_gate_in_kernel_matches_the_gate_computed_outside():
    rng = np.random.default_rng(3)
    args, kw = random_call("kda", "chunk", np.float32)
    q, k, v, _, beta = args
    HV, K = v.shape[2], q.shape[3]
    x = rng.standard_normal(v.shape[:3] + (K,)).astype(np.float32)
    A_log = rng.uniform(-1, 0.5, HV).astype(np.float32)
    dt_bias = rng.standard_normal(HV * K).astype(np.float32)
    g = -np.exp(A_log)[:, None] * np.logaddexp(0, x + dt_bias.reshape(HV, K))
    o1, _ = linea.chunk_kda(q, k, v, x, beta, use_gate_in_kernel=True, A_log=A_log, dt_bias=dt_bias)
    o2, _ = linea.chunk_kda(q, k, v, g.astype(np.float32), beta)
    assert relative_error(o1, o2) <= 1e-5


def test_linear_attn_normalize_returns_fla_z_state():
    args, _ = random_call("linear_attn", "chunk", np.float32)
    o, (S, z) = linea.chunk_linear_attn(*args, output_final_state=True)  # normalize=True: fla's default here
    np.testing.assert_allclose(z, args[1].sum(1, keepdims=True), rtol=1e-5, atol=1e-5)
    o_plain, S_plain = linea.chunk_linear_attn(*args, output_final_state=True, normalize=False)
    np.testing.assert_allclose(S, S_plain, rtol=1e-6, atol=1e-6)
    assert relative_error(o, o_plain) > 1e-3  # the normaliser changed o


def test_decode_step_pool_skips_rows_marked_minus_one():
    rng = np.random.default_rng(5)
    args, kw = random_call("kda", "fused_recurrent", np.float32, B=3, T=1)
    HV, K, V = args[2].shape[2], args[0].shape[3], args[2].shape[3]
    pool = rng.standard_normal((5, HV, K, V)).astype(np.float32)
    before = pool.copy()
    idx = np.array([4, -1, 0], np.int32)
    o, ht = linea.fused_recurrent_kda(*args, initial_state=pool, output_final_state=True,
                                      ssm_state_indices=idx)
    assert ht is pool
    assert np.all(o[1] == 0)  # the skipped row's output is zero
    np.testing.assert_array_equal(pool[[1, 2, 3]], before[[1, 2, 3]])  # untouched states
    # Row 0 with state 4 equals a one-token recurrent call from that state.
    o_ref, h_ref = linea.fused_recurrent_kda(*[x[:1] for x in args], initial_state=before[4:5],
                                             output_final_state=True)
    np.testing.assert_allclose(o[0], o_ref[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(pool[4], h_ref[0], rtol=1e-6, atol=1e-6)


def test_threads_do_not_change_results():
    args, kw = random_call("gdn2", "chunk", np.float32, B=2, HV=4, H=4)
    linea.set_num_threads(1)
    o1, _ = linea.chunk_gdn2(*args, **kw)
    linea.set_num_threads(0)
    o2, _ = linea.chunk_gdn2(*args, **kw)
    np.testing.assert_array_equal(o1, o2)


@pytest.mark.parametrize("rule", [r for r in RULES if r != "linear_attn"])  # fla's linear_attn has no such option
@pytest.mark.parametrize("form", ["chunk", "fused_recurrent"])
def test_state_v_first_is_the_transposed_state(rule, form):
    """fla's state_v_first: states [N, HV, V, K] in and out, the same values as linea's [N, HV, K, V] transposed."""
    f = getattr(linea, f"{form}_{rule}")
    args, kw = random_call(rule, form, np.float32)
    HV, K, V = args[2].shape[2], args[0].shape[3], args[2].shape[3]
    h0 = np.random.default_rng(6).standard_normal((args[0].shape[0], HV, K, V)).astype(np.float32)
    o1, h1 = f(*args, **kw, initial_state=h0, output_final_state=True)
    o2, h2 = f(*args, **kw, initial_state=np.ascontiguousarray(h0.swapaxes(-1, -2)), output_final_state=True,
               state_v_first=True)
    assert h2.shape == (args[0].shape[0], HV, V, K)
    np.testing.assert_array_equal(o1, o2)
    np.testing.assert_array_equal(h1, h2.swapaxes(-1, -2))


def test_state_v_first_decode_pool_is_updated_in_place():
    args, kw = random_call("gated_delta_rule", "fused_recurrent", np.float32, B=2, T=1)
    HV, K, V = args[2].shape[2], args[0].shape[3], args[2].shape[3]
    pool = np.random.default_rng(7).standard_normal((3, HV, K, V)).astype(np.float32)
    pool_vk = np.ascontiguousarray(pool.swapaxes(-1, -2))
    idx = np.array([2, 0], np.int32)
    o1, h1 = linea.fused_recurrent_gated_delta_rule(*args, **kw, initial_state=pool, output_final_state=True,
                                                    ssm_state_indices=idx)
    o2, h2 = linea.fused_recurrent_gated_delta_rule(*args, **kw, initial_state=pool_vk, output_final_state=True,
                                                    ssm_state_indices=idx, state_v_first=True)
    assert h2 is pool_vk
    np.testing.assert_array_equal(o1, o2)
    np.testing.assert_array_equal(pool, pool_vk.swapaxes(-1, -2))


def test_transpose_state_layout_is_fla_legacy_name_of_state_v_first():
    args, kw = random_call("gated_delta_rule", "fused_recurrent", np.float32)
    HV, K, V = args[2].shape[2], args[0].shape[3], args[2].shape[3]
    h0_vk = np.random.default_rng(8).standard_normal((args[0].shape[0], HV, V, K)).astype(np.float32)
    o1, h1 = linea.fused_recurrent_gated_delta_rule(*args, **kw, initial_state=h0_vk, output_final_state=True,
                                                    state_v_first=True)
    with pytest.warns(DeprecationWarning):
        o2, h2 = linea.fused_recurrent_gated_delta_rule(*args, **kw, initial_state=h0_vk, output_final_state=True,
                                                        transpose_state_layout=True)
    np.testing.assert_array_equal(o1, o2)
    np.testing.assert_array_equal(h1, h2)
    with pytest.raises(ValueError, match="not both"):
        linea.fused_recurrent_gated_delta_rule(*args, **kw, state_v_first=True, transpose_state_layout=True)
