# Stub of the extension module linea._linea (python/src/module.cpp): linea's kernels over preallocated arrays.
# Arrays are numpy arrays, DLPack tensors or torch tensors described as (data_ptr, shape, stride, dtype code
# 0 float32 / 1 float64 / 2 bfloat16 / 3 float16 / 4 int32 / 5 int64, device index or -1), keyed by linea::arguments' / linea::gradients' field names
# ("q", "gk", "initial_state", "ccq.lambda", "gate.A_log", "o", "final_state", "d_o", "dq", ...).
from typing import Any, Optional

class options:
    form: str  # "recurrent" | "chunkwise" | "step"
    read: str  # "identity" | "ccq_uniform" | "ccq_decayed"
    backend: str  # "cpu" | "reference" | "cuda"
    dtype: str  # "float32" | "float64" | "bfloat16" | "float16" (CUDA) (the storage type of every input)
    scale: Optional[float]
    qk_l2norm: bool
    beta_act: int  # 0 none, 1 sigmoid, 2 two_sigmoid
    normalize: bool
    lower_bound: Optional[float]
    chunk_size: int
    threads: int  # 0: one per hardware thread
    stream: int  # cuda: the cudaStream_t to run on (torch's current stream)
    repeat: int  # kernel runs per call (> 1 only to time the kernel alone)
    def __init__(self) -> None: ...

has_cuda: bool  # whether this build has the CUDA backend (compiled where nvcc was found)
_description_tag: object  # the first item of the package's torch-tensor descriptions (_arrays.for_kernel)

def forward(op: str, arrays: dict[str, Any], options: options) -> None:
    """Runs the forward of rule `op` (fla's op name) on the arrays, writing the outputs given."""

def backward(op: str, arrays: dict[str, Any], options: options) -> None:
    """Runs the backward of rule `op`: the forward's arrays plus d_o, d_final_state and the gradient outputs."""

def fla_forward(op: str, form: int, q: Any, k: Any, v: Any, g: Any, gk: Any, beta: Any, b: Any, w: Any,
                scale: Optional[float], initial_state: Any, output_final_state: bool, cu_seqlens: Any,
                qk_l2norm: bool, beta_act: int, normalize: bool, threads: int,
                linea_kw: Optional[dict[str, Any]], /) -> Optional[tuple[Any, Any]]:
    """The common case of a public call (linea.chunk_* for form 1, linea.fused_recurrent_* for form 0) in C++: reads
    numpy arrays or torch tensors, allocates o [B, T, HV, V] (and the final state [N, HV, K, V] when asked for;
    the decode step's pool with ssm_state_indices in linea_kw), runs the kernel and returns (o, ht). Returns None,
    before any work, where the Python layer must take the call: autograd, dtype widening, fla options it handles,
    other linea keyword arguments than ssm_state_indices and chunk_size (python/src/fla_call.hpp). Positional
    arguments only (a METH_FASTCALL function)."""
