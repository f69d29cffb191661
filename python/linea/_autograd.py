"""torch.autograd over linea's forward and backward (SPEC §6): the loss seen by the backward is
⟨o, do⟩ + ⟨S_T, dS_T⟩, and every input given gets its gradient (of the raw stored input under in-kernel options).

The backward is linea's float64 reference today (python/src/dispatch.hpp, run_backward): it runs on the inputs
widened to float64 and the gradients are rounded to each input's dtype."""
from __future__ import annotations

import torch

from . import _arrays as A
from . import _linea
from ._core import INPUTS, Options, run_kernel


# What the extension's backward computes in (the reference backward: float64 whatever the inputs).
BACKWARD_DTYPE = "float64"


def needs_grad(x: dict) -> bool:
    return torch.is_grad_enabled() and any(
        A.is_torch(x.get(name)) and x[name].requires_grad for name, _, _ in INPUTS)


class LineaFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, spec, *tensors):
        op, opts, backend, storage, want_final, want_ccq, names, extra = spec
        x = dict(zip(names, tensors))
        x.update(extra)
        o, final, stats = run_kernel(op, x, opts, backend, storage, want_final, want_ccq)
        ctx.spec, ctx.extra = spec, extra
        ctx.save_for_backward(*tensors)
        outs = [o] + ([final] if want_final else []) + (list(stats) if want_ccq else [])
        if want_ccq:  # linea's backward takes no gradient of the final CCQ statistics
            ctx.mark_non_differentiable(*stats)
        return tuple(outs)

    @staticmethod
    def backward(ctx, d_o, *d_rest):
        op, opts, backend, storage, want_final, want_ccq, names, extra = ctx.spec
        tensors = ctx.saved_tensors
        d_final = d_rest[0] if want_final else None
        work = BACKWARD_DTYPE
        state = A.state_dtype(work)
        grad_name = {name: (dname, is_state) for name, dname, is_state in INPUTS}
        arrays = dict(extra)
        for name, t in zip(names, tensors):
            is_state = grad_name[name][1]
            arrays[name] = t if is_state is None else A.cast(t, state if is_state else work)
        arrays["d_o"] = A.cast(d_o.contiguous(), work)
        if d_final is not None:
            arrays["d_final_state"] = A.cast(d_final.contiguous(), state)
        wanted = {}
        for i, (name, t) in enumerate(zip(names, tensors)):
            if ctx.needs_input_grad[i + 1]:
                dname, is_state = grad_name[name]
                dtype = work if is_state is False else state  # dA_log, ddt_bias: the state type
                wanted[name] = arrays[dname] = torch.empty(t.shape, dtype=getattr(torch, dtype), device=t.device)
        _linea.backward(op, {k: A.for_kernel(v) for k, v in arrays.items()}, opts.native("cpu", work))
        grads = [None]
        for name, t in zip(names, tensors):
            gr = wanted.get(name)
            grads.append(None if gr is None else gr.to(t.dtype))
        return tuple(grads)


def apply(op: str, x: dict, opts: Options, backend: str, storage: str, want_final: bool, want_ccq: bool):
    names = tuple(name for name, _, _ in INPUTS if x.get(name) is not None)
    extra = {k: x[k] for k in ("cu_seqlens", "state_indices") if x.get(k) is not None}
    spec = (op, opts, backend, storage, want_final, want_ccq, names, extra)
    outs = LineaFunction.apply(spec, *(x[n] for n in names))
    o = outs[0]
    final = outs[1] if want_final else None
    stats = tuple(outs[1 + int(want_final):]) if want_ccq else None
    return o, final, stats
