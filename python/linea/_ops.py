"""fla's functions (fla.ops.*: chunk_* and fused_recurrent_*) with fla's names, argument order, defaults and return
values, over linea's chunkwise form (chunk_*), recurrent form (fused_recurrent_*) and decode step
(fused_recurrent_* with ssm_state_indices).

Shapes (fla's layout): q, k [B, T, H, K]; v [B, T, HV, V] (HV = G·H, grouped value heads); scalar gates g and beta
[B, T, HV]; per-key gates [B, T, HV, K]; gdn2's erase gate b [B, T, HV, K] and write gate w [B, T, HV, V]; states
[N, HV, K, V] with N = B, or the number of packed sequences with cu_seqlens [N + 1] (B = 1). Outputs: o [B, T, HV, V]
in q's dtype, final state [N, HV, K, V] in float32 (float64 for float64 inputs), None unless output_final_state.

linea's own keyword arguments, after fla's:
  ccq_lambda [B, T, HV]          the CCQ read (SPEC §3) q̃ = (I − λΣ)q; None: the identity read
  ccq_weighting                  "uniform" (every key alike) or "decayed" (keys decay with ccq_log_decay, by default
                                 the rule's own gate)
  ccq_log_decay [B, T, HV]       the statistics' log decay for "decayed"
  ccq_initial_state (C0, m0, z0) initial statistics [N, HV, K, K], [N, HV, K], [N, HV]
  output_ccq_state               also return the final statistics (C, m, z): (o, ht, (C, m, z))
  chunk_size                     chunk_* only: 16, 32, 64 (default) or 128
  ssm_state_indices [B]          fused_recurrent_* only: the decode step (T = 1) over a state pool initial_state
                                 [N, HV, K, V], updated in place; row b uses state ssm_state_indices[b], -1 skips it

Each function first offers the call to the extension's C++ path (_linea.fla_forward, python/src/fla_call.hpp),
which takes the common case whole and declines the rest (then _call below): the same kernels either way.
"""
from __future__ import annotations

import warnings

from . import _arrays as A
from . import _core, _linea
from ._core import forward, options

# The common case of a call in C++ (python/src/fla_call.hpp): (o, ht), or None where this module's path must take
# the call (autograd, dtype widening, fla options handled here, anything unusual). Each public function tries it
# first when none of its arguments needs this module; linea.reference.* (backend "reference") never does.
_backend = _core._backend

_READS = {"uniform": "ccq_uniform", "decayed": "ccq_decayed"}


def _fast(*args):
    """_linea.fla_forward, whose errors of a decode step name the pool as the caller gave it (initial_state: the
    C++ path passes the pool as the final state too). The last argument is the call's linea keywords; the try
    costs nothing unless it raises."""
    try:
        return _linea.fla_forward(*args)
    except (ValueError, TypeError) as e:
        if args[-1].get("ssm_state_indices") is not None:
            _core.name_pools_as_given(e)
        raise


def _unsupported(**options):
    """fla options linea does not implement: an error rather than a silently different result."""
    for name, value in options.items():
        if value:
            raise ValueError(f"linea: fla's option {name}={value!r} is not supported by linea")


def _call(op, form, q, k, v, gates, *, scale, initial_state, output_final_state, cu_seqlens, state_v_first=False,
          use_qk_l2norm_in_kernel=False, use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
          use_gate_in_kernel=False, A_log=None, dt_bias=None, lower_bound=None, normalize=False,
          ccq_lambda=None, ccq_weighting="uniform", ccq_log_decay=None, ccq_initial_state=None,
          output_ccq_state=False, ssm_state_indices=None, chunk_size=64, transpose_state_layout=None, **unknown):
    # This runs every call (bench/python_overhead.py): the common path is a few dict stores and one cached lookup.
    if unknown:  # (the public functions pass their **linea_kw here: not this helper's name in the message)
        raise TypeError(f"linea: {op} ({form} form): unexpected keyword argument {next(iter(unknown))!r}")
    if transpose_state_layout is not None:  # fla's legacy name of state_v_first: a warning, and not both
        if state_v_first:
            raise ValueError("linea: give state_v_first or its legacy name transpose_state_layout, not both")
        warnings.warn("transpose_state_layout is deprecated; use state_v_first (as fla)", DeprecationWarning,
                      stacklevel=3)
        state_v_first = bool(transpose_state_layout)
    pool = initial_state
    if state_v_first and initial_state is not None and not isinstance(initial_state, tuple):
        # (checked in the caller's layout: linea's own message would show the transposed view)
        s, sq, sv = (tuple(getattr(x, "shape", ())) for x in (initial_state, q, v))
        if len(sq) == 4 and len(sv) == 4 and (len(s) != 4 or s[1:] != (sv[2], sv[3], sq[3])):
            raise ValueError(f"linea: argument 'initial_state' has shape {list(s)}; expected [N, HV, V, K] = "
                             f"[N, {sv[2]}, {sv[3]}, {sq[3]}] (state_v_first)")
    if state_v_first and initial_state is not None:
        # fla's state_v_first: states [N, HV, V, K]. linea's are [N, HV, K, V] and linea takes strides: the same
        # memory seen transposed, no copy (a decode pool is still updated in place).
        initial_state = A.swap_last(initial_state)
    x = {"q": q, "k": k, "v": v, "initial_state": initial_state, "cu_seqlens": cu_seqlens}
    x.update(gates)
    beta_act = (2 if allow_neg_eigval else 1) if use_beta_sigmoid_in_kernel else 0
    if use_gate_in_kernel:
        if A_log is None:
            if lower_bound is None:
                raise ValueError("linea: use_gate_in_kernel=True needs A_log (or lower_bound)")
            # fla: without A_log the gate is lower_bound·σ(g + dt_bias), which is A_log = 0 (exp(0) = 1).
            HV = A.shape_of(v, "v")[2]
            A_log = A.zeros(q, (HV,), "float32")
        # fla shapes them [HV] or e.g. [1, 1, HV, 1] / [HV, K]; linea's are flat: [HV], [HV] or [HV·K].
        x["gate.A_log"], x["gate.dt_bias"] = A.flat(A_log), A.flat(dt_bias)
    else:
        lower_bound = None
    if ssm_state_indices is not None:
        if form != "recurrent":
            raise ValueError("linea: ssm_state_indices (the decode step) belongs to the fused_recurrent_* functions")
        if initial_state is None:
            raise ValueError("linea: ssm_state_indices needs the state pool as initial_state [N, HV, K, V]")
        form = "step"
        x["state_indices"] = ssm_state_indices
    read = "identity"
    if ccq_lambda is not None:
        if ccq_weighting not in _READS:
            raise ValueError(f"linea: ccq_weighting={ccq_weighting!r}; use 'uniform' or 'decayed'")
        read = _READS[ccq_weighting]
        x["ccq.lambda"], x["ccq.log_decay"] = ccq_lambda, ccq_log_decay
        if ccq_initial_state is not None:
            if not isinstance(ccq_initial_state, (tuple, list)) or len(ccq_initial_state) != 3:
                raise ValueError("linea: argument 'ccq_initial_state' must be the statistics (C0 [N, HV, K, K], "
                                 "m0 [N, HV, K], z0 [N, HV])")
            x["ccq.C0"], x["ccq.m0"], x["ccq.z0"] = ccq_initial_state
    elif ccq_log_decay is not None or ccq_initial_state is not None or output_ccq_state:
        raise ValueError("linea: the ccq_* arguments need ccq_lambda (the CCQ read)")
    opts = options(form, read, scale, use_qk_l2norm_in_kernel, beta_act, normalize, lower_bound, chunk_size)
    o, ht, stats = forward(op, x, opts, want_final=output_final_state, want_ccq=output_ccq_state)
    if state_v_first and ht is not None:
        ht = pool if form == "step" else A.swap_last(ht)  # [N, HV, V, K], as fla returns it
    return (o, ht, stats) if output_ccq_state else (o, ht)


def _linear_attn(form, q, k, v, scale, initial_state, output_final_state, normalize, cu_seqlens, linea_kw):
    # fla's normaliser state: with normalize, initial_state may be (kv_state, z_state) and the final state is
    # (kv_state, z_state), z_state = Σ_t k_t [N, 1, H, K]. linea's normaliser starts from z_0 = 0 (docs/usage.md).
    if isinstance(initial_state, tuple) and not normalize:
        raise ValueError("linea: argument 'initial_state' is a tuple (kv_state, z_state), the normaliser's form: "
                         "give normalize=True, or the state [N, HV, K, V] alone")
    if normalize and isinstance(initial_state, tuple):
        if len(initial_state) != 2:
            raise ValueError("linea: argument 'initial_state' must be (kv_state, z_state) with normalize=True")
        initial_state, z_init = initial_state
        if z_init is not None:
            raise ValueError("linea: a z_state in initial_state is not supported: linea's normaliser starts at z_0 = 0")
    out = _call("linear_attn", form, q, k, v, {}, scale=scale, initial_state=initial_state,
                output_final_state=output_final_state, cu_seqlens=cu_seqlens, normalize=normalize, **linea_kw)
    if normalize and output_final_state:
        out = (out[0], (out[1], A.key_sum(k, cu_seqlens))) + tuple(out[2:])
    return out


def chunk_linear_attn(q, k, v, scale=None, initial_state=None, output_final_state=False, normalize=True,
                      cu_seqlens=None, **linea_kw):
    """Linear attention (the additive rule, no decay), chunkwise. Returns (o [B, T, HV, V], final state).
    With normalize (fla's default here) o_t is divided by s·q_t·Σ_{j≤t} k_j + 1e-10 and the final state is
    (S_T, z_T), z_T = Σ_t k_t [N, 1, H, K]."""
    if not (normalize and output_final_state) and _backend.get() == "cpu":
        r = _fast("linear_attn", 1, q, k, v, None, None, None, None, None, scale, initial_state, output_final_state,
                  cu_seqlens, False, 0, normalize, _core._threads, linea_kw)
        if r is not None:
            return r
    return _linear_attn("chunkwise", q, k, v, scale, initial_state, output_final_state, normalize, cu_seqlens,
                        linea_kw)


def fused_recurrent_linear_attn(q, k, v, scale=None, initial_state=None, output_final_state=False, reverse=False,
                                normalize=False, cu_seqlens=None, **linea_kw):
    """Linear attention (the additive rule), recurrent form. Returns (o [B, T, HV, V], final state)."""
    if not (reverse or normalize and output_final_state) and _backend.get() == "cpu":
        r = _fast("linear_attn", 0, q, k, v, None, None, None, None, None, scale, initial_state, output_final_state,
                  cu_seqlens, False, 0, normalize, _core._threads, linea_kw)
        if r is not None:
            return r
    _unsupported(reverse=reverse)
    return _linear_attn("recurrent", q, k, v, scale, initial_state, output_final_state, normalize, cu_seqlens,
                        linea_kw)


def _simple_gla(form, q, k, v, g, g_gamma, cu_seqlens, state_v_first, linea_kw, **fla_kw):
    if (g is None) == (g_gamma is None):
        raise ValueError("linea: simple_gla takes exactly one of g [B, T, HV] and g_gamma [HV]")
    if g is None:  # a constant per-head log decay: g_gamma seen as [B, T, HV] with stride 0 over B and T
        (B, T), HV = A.shape_of(q, "q")[:2], A.shape_of(v, "v")[2]
        A.expect_unmasked(g_gamma, "g_gamma")  # (numpy's broadcast_to would drop the mask, unseen by prepare)
        gg = A.shape_of(g_gamma, "g_gamma")
        if gg != (HV,):  # (broadcasting would also take [1] or [T, HV], which fla's g_gamma is not)
            raise ValueError(f"linea: argument 'g_gamma' has shape {list(gg)}; expected [HV] = [{HV}]")
        if not A.dtype_name(g_gamma).startswith(("float", "bfloat")):
            raise TypeError(f"linea: argument 'g_gamma' has dtype {A.dtype_name(g_gamma)}; expected a floating dtype")
        g = A.broadcast(g_gamma, (B, T, HV))
    return _call("simple_gla", form, q, k, v, {"g": g}, cu_seqlens=cu_seqlens, state_v_first=state_v_first,
                 **fla_kw, **linea_kw)


def chunk_simple_gla(q, k, v, g=None, g_gamma=None, scale=None, initial_state=None, output_final_state=False,
                     state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None, **linea_kw):
    """Simple GLA: S_t = exp(g_t) S_{t-1} + k_t v_tᵀ, g [B, T, HV] (or g_gamma [HV], constant), chunkwise.
    Returns (o [B, T, HV, V], final state [N, HV, K, V] or None)."""
    if g is not None and g_gamma is None and not state_v_first and _backend.get() == "cpu":
        r = _fast("simple_gla", 1, q, k, v, g, None, None, None, None, scale, initial_state, output_final_state,
                  cu_seqlens, False, 0, False, _core._threads, linea_kw)
        if r is not None:
            return r
    return _simple_gla("chunkwise", q, k, v, g, g_gamma, cu_seqlens, state_v_first, linea_kw, scale=scale,
                       initial_state=initial_state, output_final_state=output_final_state)


def fused_recurrent_simple_gla(q, k, v, g=None, g_gamma=None, scale=None, initial_state=None,
                               output_final_state=False, reverse=False, state_v_first=False, cu_seqlens=None,
                               **linea_kw):
    """Simple GLA, recurrent form (or the decode step with ssm_state_indices). Returns (o, final state)."""
    if g is not None and g_gamma is None and not (reverse or state_v_first) and _backend.get() == "cpu":
        r = _fast("simple_gla", 0, q, k, v, g, None, None, None, None, scale, initial_state, output_final_state,
                  cu_seqlens, False, 0, False, _core._threads, linea_kw)
        if r is not None:
            return r
    _unsupported(reverse=reverse)
    return _simple_gla("recurrent", q, k, v, g, g_gamma, cu_seqlens, state_v_first, linea_kw, scale=scale,
                       initial_state=initial_state, output_final_state=output_final_state)


def chunk_gla(q, k, v, g, scale=None, initial_state=None, output_final_state=False, state_v_first=False,
              cu_seqlens=None, cu_seqlens_cpu=None, **linea_kw):
    """GLA: S_t = Diag(exp(g_t)) S_{t-1} + k_t v_tᵀ with a per-key log decay g [B, T, HV, K], chunkwise.
    Returns (o [B, T, HV, V], final state [N, HV, K, V] or None)."""
    if not state_v_first and _backend.get() == "cpu":
        r = _fast("gla", 1, q, k, v, None, g, None, None, None, scale, initial_state, output_final_state, cu_seqlens,
                  False, 0, False, _core._threads, linea_kw)
        if r is not None:
            return r
    return _call("gla", "chunkwise", q, k, v, {"gk": g}, scale=scale, initial_state=initial_state,
                 output_final_state=output_final_state, cu_seqlens=cu_seqlens,
                 state_v_first=state_v_first, **linea_kw)


def fused_recurrent_gla(q, k, v, gk=None, gv=None, scale=None, initial_state=None, output_final_state=False,
                        reverse=False, state_v_first=False, cu_seqlens=None, **linea_kw):
    """GLA, recurrent form (gk [B, T, HV, K]; or the decode step with ssm_state_indices). Returns (o, final state)."""
    if gk is not None and gv is None and not (reverse or state_v_first) and _backend.get() == "cpu":
        r = _fast("gla", 0, q, k, v, None, gk, None, None, None, scale, initial_state, output_final_state, cu_seqlens,
                  False, 0, False, _core._threads, linea_kw)
        if r is not None:
            return r
    _unsupported(reverse=reverse, gv=gv is not None)
    if gk is None:
        raise ValueError("linea: fused_recurrent_gla needs gk [B, T, HV, K] (a gate-free GLA is linear_attn)")
    return _call("gla", "recurrent", q, k, v, {"gk": gk}, scale=scale, initial_state=initial_state,
                 output_final_state=output_final_state, cu_seqlens=cu_seqlens,
                 state_v_first=state_v_first, **linea_kw)


def chunk_delta_rule(q, k, v, beta, scale=None, initial_state=None, output_final_state=False,
                     use_qk_l2norm_in_kernel=False, cu_seqlens=None, cu_seqlens_cpu=None, **linea_kw):
    """DeltaNet: S_t = S_{t-1} + β_t k_t (v_t − S_{t-1}ᵀk_t)ᵀ, beta [B, T, HV], chunkwise.
    Returns (o [B, T, HV, V], final state [N, HV, K, V] or None)."""
    if _backend.get() == "cpu":
        r = _fast("delta_rule", 1, q, k, v, None, None, beta, None, None, scale, initial_state, output_final_state,
                  cu_seqlens, use_qk_l2norm_in_kernel, 0, False, _core._threads, linea_kw)
        if r is not None:
            return r
    return _call("delta_rule", "chunkwise", q, k, v, {"beta": beta}, scale=scale, initial_state=initial_state,
                 output_final_state=output_final_state, cu_seqlens=cu_seqlens,
                 use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, **linea_kw)


def fused_recurrent_delta_rule(q, k, v, beta=None, scale=None, initial_state=None, output_final_state=False,
                               use_qk_l2norm_in_kernel=False, cu_seqlens=None, **linea_kw):
    """DeltaNet, recurrent form (beta None: all ones, as fla). Returns (o, final state)."""
    if beta is None:
        beta = A.zeros(q, A.shape_of(v, "v")[:3], A.storage_of(q))
        beta[...] = 1
    if _backend.get() == "cpu":
        r = _fast("delta_rule", 0, q, k, v, None, None, beta, None, None, scale, initial_state, output_final_state,
                  cu_seqlens, use_qk_l2norm_in_kernel, 0, False, _core._threads, linea_kw)
        if r is not None:
            return r
    return _call("delta_rule", "recurrent", q, k, v, {"beta": beta}, scale=scale, initial_state=initial_state,
                 output_final_state=output_final_state, cu_seqlens=cu_seqlens,
                 use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, **linea_kw)


def chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
                           use_qk_l2norm_in_kernel=False, use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                           state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None, chunk_indices=None,
                           cp_context=None, use_gate_in_kernel=False, A_log=None, dt_bias=None, **linea_kw):
    """Gated DeltaNet: S' = exp(g_t) S_{t-1}, S_t = S' + β_t k_t (v_t − S'ᵀk_t)ᵀ, g and beta [B, T, HV], chunkwise. With use_gate_in_kernel, g holds logits: g = −exp(A_log)·softplus(g + dt_bias), A_log, dt_bias [HV].
    Returns (o [B, T, HV, V], final state [N, HV, K, V] or None)."""
    if not (state_v_first or use_gate_in_kernel or cp_context is not None) and _backend.get() == "cpu":
        r = _fast("gated_delta_rule", 1, q, k, v, g, None, beta, None, None, scale, initial_state, output_final_state,
                  cu_seqlens, use_qk_l2norm_in_kernel,
                  (2 if allow_neg_eigval else 1) if use_beta_sigmoid_in_kernel else 0, False, _core._threads, linea_kw)
        if r is not None:
            return r
    _unsupported(cp_context=cp_context is not None)
    return _call("gated_delta_rule", "chunkwise", q, k, v, {"g": g, "beta": beta}, scale=scale,
                 initial_state=initial_state, output_final_state=output_final_state, cu_seqlens=cu_seqlens,
                 use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                 use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel, allow_neg_eigval=allow_neg_eigval,
                 use_gate_in_kernel=use_gate_in_kernel, A_log=A_log, dt_bias=dt_bias,
                 state_v_first=state_v_first, **linea_kw)


def fused_recurrent_gated_delta_rule(q, k, v, g=None, gk=None, gv=None, beta=None, scale=None, initial_state=None,
                                     output_final_state=False, use_qk_l2norm_in_kernel=False,
                                     use_gate_in_kernel=False, A_log=None, dt_bias=None,
                                     use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False, state_v_first=False,
                                     cu_seqlens=None, **linea_kw):
    """Gated DeltaNet, recurrent form (or the decode step with ssm_state_indices). fla's gk here is KDA's gate:
    given gk instead of g, the call is linea's kda. Returns (o, final state)."""
    if beta is None:
        beta = A.zeros(q, A.shape_of(v, "v")[:3], A.storage_of(q))
        beta[...] = 1
    if gv is None and (g is None or gk is None) and not (state_v_first or use_gate_in_kernel) and \
            _backend.get() == "cpu":
        r = _fast("gated_delta_rule" if gk is None else "kda", 0, q, k, v, g if gk is None else None, gk, beta, None,
                  None, scale, initial_state, output_final_state, cu_seqlens, use_qk_l2norm_in_kernel,
                  (2 if allow_neg_eigval else 1) if use_beta_sigmoid_in_kernel else 0, False, _core._threads, linea_kw)
        if r is not None:
            return r
    _unsupported(gv=gv is not None)
    if gk is not None:
        if g is not None:
            raise ValueError("linea: give g (scalar decay) or gk (per-key decay), not both")
        op, gates = "kda", {"gk": gk, "beta": beta}
    else:
        op, gates = "gated_delta_rule", {"g": g, "beta": beta}
    return _call(op, "recurrent", q, k, v, gates, scale=scale, initial_state=initial_state,
                 output_final_state=output_final_state, cu_seqlens=cu_seqlens,
                 use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                 use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel, allow_neg_eigval=allow_neg_eigval,
                 use_gate_in_kernel=use_gate_in_kernel, A_log=A_log, dt_bias=dt_bias,
                 state_v_first=state_v_first, **linea_kw)


def chunk_kda(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
              use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False, use_beta_sigmoid_in_kernel=False,
              allow_neg_eigval=False, safe_gate=False, lower_bound=None, disable_recompute=False,
              return_intermediate_states=False, state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None,
              cp_context=None, A_log=None, dt_bias=None, **linea_kw):
    """KDA: the delta rule with a per-key log decay g [B, T, HV, K], beta [B, T, HV], chunkwise. With
    use_gate_in_kernel, g holds logits: −exp(A_log)·softplus(g + dt_bias), or lower_bound·σ(exp(A_log)(g + dt_bias))
    with lower_bound; A_log [HV], dt_bias [HV·K]. Returns (o [B, T, HV, V], final state [N, HV, K, V] or None)."""
    if not (return_intermediate_states or cp_context is not None or use_gate_in_kernel or state_v_first) and \
            _backend.get() == "cpu":
        r = _fast("kda", 1, q, k, v, None, g, beta, None, None, scale, initial_state, output_final_state, cu_seqlens,
                  use_qk_l2norm_in_kernel, (2 if allow_neg_eigval else 1) if use_beta_sigmoid_in_kernel else 0, False,
                  _core._threads, linea_kw)
        if r is not None:
            return r
    _unsupported(return_intermediate_states=return_intermediate_states, cp_context=cp_context is not None)
    return _call("kda", "chunkwise", q, k, v, {"gk": g, "beta": beta}, scale=scale, initial_state=initial_state,
                 output_final_state=output_final_state, cu_seqlens=cu_seqlens,
                 use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                 use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel, allow_neg_eigval=allow_neg_eigval,
                 use_gate_in_kernel=use_gate_in_kernel, A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound,
                 state_v_first=state_v_first, **linea_kw)


def fused_recurrent_kda(q, k, v, g, beta, A_log=None, dt_bias=None, scale=None, initial_state=None,
                        output_final_state=False, use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False,
                        use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False, lower_bound=None,
                        state_v_first=False, cu_seqlens=None, **linea_kw):
    """KDA, recurrent form (or the decode step with ssm_state_indices). Returns (o, final state)."""
    if not (use_gate_in_kernel or state_v_first) and _backend.get() == "cpu":
        r = _fast("kda", 0, q, k, v, None, g, beta, None, None, scale, initial_state, output_final_state, cu_seqlens,
                  use_qk_l2norm_in_kernel, (2 if allow_neg_eigval else 1) if use_beta_sigmoid_in_kernel else 0, False,
                  _core._threads, linea_kw)
        if r is not None:
            return r
    return _call("kda", "recurrent", q, k, v, {"gk": g, "beta": beta}, scale=scale, initial_state=initial_state,
                 output_final_state=output_final_state, cu_seqlens=cu_seqlens,
                 use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                 use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel, allow_neg_eigval=allow_neg_eigval,
                 use_gate_in_kernel=use_gate_in_kernel, A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound,
                 state_v_first=state_v_first, **linea_kw)


def chunk_gdn2(q, k, v, g, b, w, scale=None, initial_state=None, output_final_state=False,
               use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False, cu_seqlens=None, cu_seqlens_cpu=None,
               safe_gate=False, lower_bound=None, disable_recompute=False, return_intermediate_states=False,
               state_v_first=False, A_log=None, dt_bias=None, **linea_kw):
    """Gated DeltaNet-2: per-key log decay g [B, T, HV, K], erase gate b [B, T, HV, K], write gate w [B, T, HV, V]:
    u_t = w_t ⊙ v_t − S'ᵀ(b_t ⊙ k_t), chunkwise. Returns (o [B, T, HV, V], final state [N, HV, K, V] or None)."""
    if not (return_intermediate_states or use_gate_in_kernel or state_v_first) and _backend.get() == "cpu":
        r = _fast("gdn2", 1, q, k, v, None, g, None, b, w, scale, initial_state, output_final_state, cu_seqlens,
                  use_qk_l2norm_in_kernel, 0, False, _core._threads, linea_kw)
        if r is not None:
            return r
    _unsupported(return_intermediate_states=return_intermediate_states)
    return _call("gdn2", "chunkwise", q, k, v, {"gk": g, "b": b, "w": w}, scale=scale, initial_state=initial_state,
                 output_final_state=output_final_state, cu_seqlens=cu_seqlens,
                 use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, use_gate_in_kernel=use_gate_in_kernel,
                 A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound,
                 state_v_first=state_v_first, **linea_kw)


def fused_recurrent_gdn2(q, k, v, g, b, w, A_log=None, dt_bias=None, scale=None, initial_state=None,
                         output_final_state=False, use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False,
                         lower_bound=None, state_v_first=False, cu_seqlens=None, **linea_kw):
    """Gated DeltaNet-2, recurrent form (or the decode step with ssm_state_indices). Returns (o, final state)."""
    if not (use_gate_in_kernel or state_v_first) and _backend.get() == "cpu":
        r = _fast("gdn2", 0, q, k, v, None, g, None, b, w, scale, initial_state, output_final_state, cu_seqlens,
                  use_qk_l2norm_in_kernel, 0, False, _core._threads, linea_kw)
        if r is not None:
            return r
    return _call("gdn2", "recurrent", q, k, v, {"gk": g, "b": b, "w": w}, scale=scale, initial_state=initial_state,
                 output_final_state=output_final_state, cu_seqlens=cu_seqlens,
                 use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, use_gate_in_kernel=use_gate_in_kernel,
                 A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound,
                 state_v_first=state_v_first, **linea_kw)


FUNCTIONS = (
    "chunk_linear_attn", "fused_recurrent_linear_attn", "chunk_simple_gla", "fused_recurrent_simple_gla",
    "chunk_gla", "fused_recurrent_gla", "chunk_delta_rule", "fused_recurrent_delta_rule", "chunk_gated_delta_rule",
    "fused_recurrent_gated_delta_rule", "chunk_kda", "fused_recurrent_kda", "chunk_gdn2", "fused_recurrent_gdn2",
)
