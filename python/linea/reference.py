"""linea.reference: the same functions as linea.*, run by linea's float64 oracle (include/linea/reference/).

Whatever the input dtype, the inputs are read as float64 and the outputs are float64: the truth to check a kernel
against (SPEC §5: relative error ‖x − ref‖ / ‖ref‖). Chunk and recurrent forms give the same oracle; the decode
step (ssm_state_indices) has none. With torch tensors that need gradients, the backward is the float64 one too.
"""
import functools

from . import _ops
from ._core import using_backend


def _on_reference(f):
    @functools.wraps(f)
    def call(*args, **kwargs):
        # The form first: what the oracle cannot run at all is said before any argument is read (the extension's
        # own refusal comes after its dtype checks, which a decode pool in float32 fails first).
        if kwargs.get("ssm_state_indices") is not None:
            step = f.__name__.replace("chunk_", "fused_recurrent_", 1)  # (the step is a fused_recurrent_* call)
            raise ValueError(f"linea: the float64 reference has no decode step (ssm_state_indices); the step runs "
                             f"on the cpu backend: linea.{step}")
        with using_backend("reference"):
            return f(*args, **kwargs)

    return call


for _name in _ops.FUNCTIONS:
    globals()[_name] = _on_reference(getattr(_ops, _name))

__all__ = list(_ops.FUNCTIONS)
