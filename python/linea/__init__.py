"""linea: linear-attention kernels with flash-linear-attention's API.

    import linea
    o, ht = linea.chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True)   # numpy or torch in, same out
    o64, ht64 = linea.reference.chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True)  # float64 oracle

The functions are fla's (fla.ops.*), with fla's argument names, order, defaults, layout [B, T, H, K] and return
values; see linea._ops for the shapes and linea's own keyword arguments (CCQ read, decode step, chunk size).
With torch tensors that need gradients they are differentiable (linea's backward). Bad arguments raise
ValueError (or TypeError for dtypes) carrying linea's message.
"""
from ._core import get_num_threads, set_num_threads
from ._ops import (FUNCTIONS, chunk_delta_rule, chunk_gated_delta_rule, chunk_gdn2, chunk_gla, chunk_kda,
                   chunk_linear_attn, chunk_simple_gla, fused_recurrent_delta_rule, fused_recurrent_gated_delta_rule,
                   fused_recurrent_gdn2, fused_recurrent_gla, fused_recurrent_kda, fused_recurrent_linear_attn,
                   fused_recurrent_simple_gla)
from . import reference

__all__ = list(FUNCTIONS) + ["reference", "set_num_threads", "get_num_threads"]
__version__ = "0.1.0"
