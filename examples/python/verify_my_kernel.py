"""Checking your own kernel against linea, as a kernel author would from a script or a pytest test.

The kernel here is a chunked Gated DeltaNet forward written in plain PyTorch (the WY / UT-transform form that fla's
Triton kernels implement): the kind of code whose indices are easy to get subtly wrong. linea's float64 reference
runs the same inputs token by token; the relative errors must be within SPEC §5 for the dtype.

    pip install .                       # linea, from the checkout
    python examples/python/verify_my_kernel.py
    python -m linea.verify examples.python.verify_my_kernel:my_chunk_gated_delta_rule --op gated_delta_rule \\
        --shape 2,200,2,32,32 --torch   # the same check from the command line (run from the checkout)
"""
import sys

import torch

import linea
import linea.verify


def my_chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
                              chunk_size=32):
    """o, S_T of the gated delta rule in fla's layout [B, T, H, K], chunk by chunk (H = HV, float32 state)."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    scale = K ** -0.5 if scale is None else scale
    dtype = q.dtype
    acc = torch.float64 if dtype == torch.float64 else torch.float32  # 16-bit inputs accumulate in float32
    q, k, v, g, beta = (x.to(acc).transpose(1, 2) for x in (q, k, v, g, beta))  # [B, H, T, ...]
    S = torch.zeros(B, H, K, V, dtype=acc) if initial_state is None else initial_state.to(acc).clone()
    o = torch.empty(B, H, T, V, dtype=acc)
    for s in range(0, T, chunk_size):
        e = min(s + chunk_size, T)
        qc, kc, vc, bc = q[:, :, s:e] * scale, k[:, :, s:e], v[:, :, s:e], beta[:, :, s:e]
        gc = g[:, :, s:e].cumsum(-1)  # log decay from the chunk start to each token
        decay = torch.exp(gc[..., :, None] - gc[..., None, :]).tril()  # exp(G_i − G_j), j ≤ i
        # UT transform: (I + strictly-lower(β_i k_i·k_j exp(G_i − G_j))) U = β (v − exp(G) S_0ᵀ k)
        A = ((bc[..., None] * kc) @ kc.transpose(-1, -2) * decay).tril(-1)
        eye = torch.eye(e - s, dtype=acc)
        rhs = bc[..., None] * (vc - torch.exp(gc)[..., None] * (kc @ S))
        U = torch.linalg.solve_triangular(eye + A, rhs, upper=False)
        # Read: o_i = exp(G_i) q_i S_0 + Σ_{j≤i} (q_i·k_j) exp(G_i − G_j) u_j
        o[:, :, s:e] = torch.exp(gc)[..., None] * (qc @ S) + ((qc @ kc.transpose(-1, -2)) * decay) @ U
        # State: S_C = exp(G_C) S_0 + Σ_j exp(G_C − G_j) k_j u_jᵀ
        last = gc[..., -1:]
        S = torch.exp(last)[..., None] * S + (kc * torch.exp(last - gc)[..., None]).transpose(-1, -2) @ U
    return o.transpose(1, 2).to(dtype), (S if output_final_state else None)


def main() -> int:
    torch.manual_seed(0)
    ok = True
    for dtype, T in (("float32", 200), ("float64", 77), ("bfloat16", 130)):
        errors = linea.verify.verify(my_chunk_gated_delta_rule, "gated_delta_rule", B=2, T=T, H=2, K=32, V=32,
                                     dtype=dtype, torch=True)
        bound = linea.verify.bound(dtype, T)
        for out, err in errors.items():
            passed = err <= bound
            ok &= passed
            print(f"{'PASS' if passed else 'FAIL'}  {dtype:<9} T={T:<4} {out:<12} relative error {err:.2e} "
                  f"(bound {bound:g})")
    # The same check written out, with linea's own kernel next to yours (numpy in, numpy out works too).
    args, kw = linea.verify.random_inputs("gated_delta_rule", B=1, T=100, H=2, K=32, V=32, initial_state=True)
    o64, _ = linea.reference.chunk_gated_delta_rule(*args, **kw)
    targs, tkw = linea.verify.to_torch(args, kw)
    for name, f in (("yours", my_chunk_gated_delta_rule), ("linea", linea.chunk_gated_delta_rule)):
        print(f"{name}: relative error of o {linea.verify.relative_error(f(*targs, **tkw)[0], o64):.2e}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
