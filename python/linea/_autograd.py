"""torch.autograd over linea's forward and backward (SPEC §6): the loss seen by the backward is
⟨o, do⟩ + ⟨S_T, dS_T⟩, and every input given gets its gradient (of the raw stored input under in-kernel options).

The backward is linea's (python/src/dispatch.hpp): the CPU backward for CPU tensors, the CUDA backward for CUDA
tensors, the float64 reference for linea.reference.*. It computes in BACKWARD_DTYPE[input dtype]: 16-bit inputs
are widened to float32 and their gradients rounded back to the input's dtype."""
from __future__ import annotations

import torch

from . import _arrays as A
from . import _linea
from ._core import INPUTS, Options, run_kernel

# What the extension's backward computes in, by the forward's input dtype.
BACKWARD_DTYPE = {"float64": "float64", "float32": "float32", "bfloat16": "float32", "float16": "float32"}
_GRAD = {name: (dname, is_state) for name, dname, is_state in INPUTS}


def needs_grad(x: dict) -> bool:
    """Whether any tensor given needs a gradient (index arrays never do): one look at each argument given."""
    return torch.is_grad_enabled() and any(
        v is not None and isinstance(v, torch.Tensor) and v.requires_grad for v in x.values())


def expect_cuda_backward(op: str, x: dict, opts: Options) -> None:
    """What the CUDA backward cannot do is an error at the forward, before any work. (Every rule, both reads and
    every option the CUDA forward takes have a CUDA backward, normalize=True included: only a build without CUDA
    is left to refuse here.)"""
    if _linea.has_cuda is False:
        raise ValueError("linea: a CUDA tensor, but this build of linea has no CUDA backend (built without nvcc)")


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
    @torch.autograd.function.once_differentiable  # linea's backward has no backward: a second-order gradient
    def backward(ctx, d_o, *d_rest):              # (create_graph=True) is an error, not a silently dropped term
        op, opts, backend, storage, want_final, want_ccq, names, extra = ctx.spec
        tensors = ctx.saved_tensors
        d_final = d_rest[0] if want_final else None
        work = BACKWARD_DTYPE[storage]
        state = A.state_dtype(work)
        arrays = dict(extra)
        if backend == "cuda" and "cu_seqlens" in arrays:  # the CUDA backward reads cu_seqlens on the host
            arrays["cu_seqlens"] = arrays["cu_seqlens"].cpu()
        for name, t in zip(names, tensors):
            is_state = _GRAD[name][1]
            arrays[name] = t if is_state is None else A.cast(t, state if is_state else work)
        arrays["d_o"] = A.cast(d_o.contiguous(), work)
        if d_final is not None:
            arrays["d_final_state"] = A.cast(d_final.contiguous(), state)
        wanted = {}
        for i, (name, t) in enumerate(zip(names, tensors)):
            if ctx.needs_input_grad[i + 1]:
                dname, is_state = _GRAD[name]
                dtype = work if is_state is False else state  # dA_log, ddt_bias: the state type
                wanted[name] = arrays[dname] = torch.empty(t.shape, dtype=getattr(torch, dtype), device=t.device)
        stream = A.stream_of(tensors[0]) if backend == "cuda" else 0
        _linea.backward(op, {k: A.for_kernel(v) for k, v in arrays.items()}, opts.native(backend, work, stream))
        grads = [None]
        for name, t in zip(names, tensors):
            gr = wanted.get(name)
            grads.append(None if gr is None else gr.to(t.dtype))
        return tuple(grads)


def apply(op: str, x: dict, opts: Options, backend: str, storage: str, want_final: bool, want_ccq: bool):
    if backend == "cuda":
        expect_cuda_backward(op, x, opts)
        # A stride-0 input (fla's g_gamma broadcast over batch and time) gets a dense copy: the CUDA backward
        # writes no stride-0 gradient; autograd sums the copy's gradient back onto g_gamma.
        x = {k: (v.contiguous() if A.is_torch(v) and 0 in v.stride() and v.numel() > 1 else v) for k, v in x.items()}
    names = tuple(name for name, _, _ in INPUTS if x.get(name) is not None)
    extra = {k: x[k] for k in ("cu_seqlens", "state_indices") if x.get(k) is not None}
    spec = (op, opts, backend, storage, want_final, want_ccq, names, extra)
    outs = LineaFunction.apply(spec, *(x[n] for n in names))
    o = outs[0]
    final = outs[1] if want_final else None
    stats = tuple(outs[1 + int(want_final):]) if want_ccq else None
    return o, final, stats
