# Stub of the extension module linea._linea (python/src/module.cpp): linea's kernels over preallocated arrays.
# Arrays are numpy arrays or DLPack tensors, keyed by linea::arguments' / linea::gradients' field names
# ("q", "gk", "initial_state", "ccq.lambda", "gate.A_log", "o", "final_state", "d_o", "dq", ...).
from typing import Any, Optional

class options:
    form: str  # "recurrent" | "chunkwise" | "step"
    read: str  # "identity" | "ccq_uniform" | "ccq_decayed"
    backend: str  # "cpu" | "reference"
    dtype: str  # "float32" | "float64" (the storage type of every input)
    scale: Optional[float]
    qk_l2norm: bool
    beta_act: int  # 0 none, 1 sigmoid, 2 two_sigmoid
    normalize: bool
    lower_bound: Optional[float]
    chunk_size: int
    threads: int  # 0: one per hardware thread
    def __init__(self) -> None: ...

def forward(op: str, arrays: dict[str, Any], options: options) -> None:
    """Runs the forward of rule `op` (fla's op name) on the arrays, writing the outputs given."""

def backward(op: str, arrays: dict[str, Any], options: options) -> None:
    """Runs the backward of rule `op`: the forward's arrays plus d_o, d_final_state and the gradient outputs."""
