"""Arrays of either kind the package takes: numpy arrays (numpy in, numpy out) and torch tensors (torch in, torch
out, on the tensor's device). Everything here is allocation and dtype bookkeeping; linea checks the shapes."""
from __future__ import annotations

import math

import numpy as np

from . import _linea

try:  # numpy has no bfloat16; ml_dtypes (used by jax and others) gives it one
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - optional
    _ml_dtypes = None

try:
    import torch as _torch
except ImportError:  # pragma: no cover - optional
    _torch = None

STORAGE = ("float32", "float64", "bfloat16", "float16")


def is_torch(x) -> bool:
    return _torch is not None and isinstance(x, _torch.Tensor)


def is_cuda(x) -> bool:
    """Whether x is a tensor in CUDA memory (the CUDA backend runs it)."""
    return _torch is not None and isinstance(x, _torch.Tensor) and x.is_cuda


def _raw_stream():
    """f(device index) -> the cudaStream_t of torch's current stream there, as an int (the cheapest way torch has)."""
    raw = getattr(_torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda index: _torch.cuda.current_stream(index).cuda_stream


_stream = None


def stream_of(x) -> int:
    """torch's current CUDA stream on x's device: where linea's kernels run, ordered with the caller's work."""
    global _stream
    if _stream is None:
        _stream = _raw_stream()
    return _stream(x.device.index)


def dtype_name(x) -> str:
    """'float32', 'bfloat16', ...: the dtype of x as linea names its storage types."""
    if is_torch(x):
        name = _TORCH_NAMES.get(x.dtype)
        return name if name is not None else str(x.dtype).removeprefix("torch.")
    d = x.dtype
    name = _NUMPY_NAMES.get(d)  # numpy's dtype.name is a slow Python property
    return name if name is not None else np.dtype(d).name


def storage_of(q, name: str = "q") -> str:
    """The storage type of a call: q's dtype, which must be one linea computes in."""
    if isinstance(q, np.ndarray):  # the common case first (this runs every call)
        d = _NUMPY_NAMES.get(q.dtype)
        if d in _FLOATS:
            return d
    if not (is_torch(q) or isinstance(q, np.ndarray)):
        raise TypeError(f"linea: argument '{name}' is a {type(q).__name__}; expected a numpy array or a torch tensor")
    d = dtype_name(q)
    if d not in STORAGE:
        raise TypeError(f"linea: argument '{name}' has dtype {d}; linea takes float32, float64, bfloat16 or float16")
    return d


def state_dtype(storage: str) -> str:
    """States (and CCQ statistics) are float64 for float64 inputs and float32 otherwise (SPEC §1)."""
    return "float64" if storage == "float64" else "float32"


def _np_dtype(name: str):
    d = _NP_DTYPES.get(name)
    if d is not None:
        return d
    if name == "bfloat16":
        if _ml_dtypes is None:
            raise TypeError("linea: bfloat16 numpy arrays need the ml_dtypes package")
        return _ml_dtypes.bfloat16
    return np.dtype(name)


def _torch_dtype(name: str):
    return getattr(_torch, name)


def empty(like, shape: tuple, dtype: str, name: str = ""):
    """An uninitialised array of the same kind (and device) as `like`. An output linea cannot allocate (sizes from
    the inputs: a large K through stride-0 keys, say) is a MemoryError naming it, its shape and q's."""
    try:
        if is_torch(like):
            return _torch.empty(shape, dtype=_torch_dtype(dtype), device=like.device)
        return np.empty(shape, _np_dtype(dtype))
    except (MemoryError, ValueError, RuntimeError) as e:
        # (numpy's "array is too big" / "maximum allowed dimension" for sizes past 2⁶³ bytes are ValueErrors; torch's
        # out-of-memory errors are RuntimeErrors: OutOfMemoryError on a GPU, the CPU allocator's "can't allocate
        # memory" — any other RuntimeError, a CUDA fault surfacing here say, is not an allocation's and goes on)
        text = str(e).lower()
        torch_oom = getattr(_torch, "OutOfMemoryError", None) if _torch is not None else None
        if isinstance(e, ValueError) and not any(w in text for w in ("too big", "maximum allowed")):
            raise
        if isinstance(e, RuntimeError) and not (torch_oom is not None and isinstance(e, torch_oom)) \
                and "can't allocate memory" not in text:
            raise
        count = math.prod(int(n) for n in shape)
        what = f"the output '{name}'" if name else "an output"
        size = count * {"float64": 8, "float32": 4}.get(dtype, 2) / 2**30
        raise MemoryError(f"linea: {what} of shape {list(shape)} ({dtype}, {size:.3g} GiB; q has shape "
                          f"{list(getattr(like, 'shape', ()))}) cannot be allocated") from e


def zeros(like, shape, dtype: str):
    if is_torch(like):
        return _torch.zeros(tuple(shape), dtype=_torch_dtype(dtype), device=like.device)
    return np.zeros(tuple(shape), dtype=_np_dtype(dtype))


def expect_unmasked(x, name: str) -> None:
    """A numpy masked array is an ndarray, and the kernels read its data as any other: its mask would be ignored (a
    silently wrong result). A TypeError naming the argument instead. (numpy.ma is looked up only for an ndarray
    subclass: numpy does not import it by itself, and a plain array or a tensor never reaches it.)"""
    if type(x) is not np.ndarray and isinstance(x, np.ndarray) and isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"linea: argument '{name}' is a numpy masked array, whose mask linea would ignore; pass "
                        ".filled(value) or .data, whichever you mean")


def shape_of(x, name: str) -> tuple:
    """x's shape, or a TypeError naming the argument where x is no array (None, a list, a number)."""
    if not (is_torch(x) or isinstance(x, np.ndarray)):
        raise TypeError(f"linea: argument '{name}' is not an array (got {type(x).__name__})")
    return tuple(x.shape)


def _complex(x) -> bool:
    return x.is_complex() if is_torch(x) else np.asarray(x).dtype.kind == "c"


def cast(x, dtype: str, like=None, name: str | None = None):
    """x in dtype (no copy when it already is); a list or scalar becomes an array of like's kind. A complex x is
    an error (naming `name`): the cast would drop its imaginary part."""
    if x is None:
        return None
    if not (is_torch(x) or isinstance(x, np.ndarray)):
        if name is not None and _complex(x):
            raise TypeError(f"linea: argument '{name}' holds complex numbers; expected real ones")
        if like is not None and is_torch(like):
            return _torch.as_tensor(x, dtype=_torch_dtype(dtype), device=like.device)
        return np.asarray(x, dtype=_np_dtype(dtype))
    if dtype_name(x) == dtype:
        return x
    if name is not None and _complex(x):  # (after the early return: a complex array is never in dtype)
        raise TypeError(f"linea: argument '{name}' has dtype {x.dtype}; expected a real floating dtype")
    if is_torch(x):
        return x.to(_torch_dtype(dtype))
    return x.astype(_np_dtype(dtype))


def index_array(x, dtypes: tuple, name: str, on_device: bool = False):
    """cu_seqlens (int64 or int32) / state_indices (int32), contiguous. A CUDA tensor stays on its device for a
    CUDA call (the kernels read it there, as fla's); otherwise the array is on the host (linea reads it there)."""
    if isinstance(x, np.ndarray) and _NUMPY_NAMES.get(x.dtype) in dtypes and x.flags.c_contiguous \
            and x.flags.aligned:
        return x  # the common case (this runs every call that gives one)
    if is_torch(x):
        if x.device.type != "cpu" and not on_device:
            x = x.cpu()
        if str(x.dtype).removeprefix("torch.") not in dtypes:
            if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == _torch.bool:
                raise TypeError(f"linea: argument '{name}' has dtype {x.dtype}; expected integers "
                                f"({' or '.join(dtypes)})")
            if x.device.type != "cpu":
                # (no host check: it would wait for the device and break graph capture; a value outside int32
                # saturates to ±(2³¹ − 1), outside every pool, where the kernels skip the row instead of a wrap
                # putting it on another one)
                x = x.clamp(-(2**31 - 1), 2**31 - 1).to(_torch_dtype(dtypes[0]))
            else:
                wide = x.to(_torch.int64)
                _expect_range(name, int(wide.min()) if x.numel() else 0, int(wide.max()) if x.numel() else 0,
                              dtypes[0])
                x = wide.to(_torch_dtype(dtypes[0]))
        # (a copy where strided or off its entries' alignment, e.g. torch.frombuffer at a byte offset, as for numpy)
        return x if x.is_contiguous() and x.data_ptr() % x.element_size() == 0 else x.clone(memory_format=_torch.contiguous_format)
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise TypeError(f"linea: argument '{name}' has dtype {a.dtype}; expected integers ({' or '.join(dtypes)})")
    if dtype_name(a) not in dtypes:
        _expect_range(name, int(a.min()) if a.size else 0, int(a.max()) if a.size else 0, dtypes[0])
        a = a.astype(dtypes[0])
    # an index array is only read: a copy where it is strided or off its element's alignment (a view at a byte
    # offset), which linea's typed reads of it cannot take
    return np.require(a, requirements=("C", "A"))


def _expect_range(name: str, lo: int, hi: int, dtype: str):
    """An index array about to be narrowed to dtype: every value must fit (a cast would wrap it to another index)."""
    bits = 31 if dtype == "int32" else 63
    if lo < -(1 << bits) or hi >= (1 << bits):
        bad = lo if lo < -(1 << bits) else hi
        raise ValueError(f"linea: argument '{name}' holds {bad}, outside {dtype}'s range")


def flat(x):
    """x as a 1-D array (a view where the layout allows); None stays None, lists become arrays later."""
    if x is None or not (is_torch(x) or isinstance(x, np.ndarray)):
        return x
    return x.reshape(-1)


def swap_last(x):
    """x with its last two axes swapped, a view (fla's state_v_first layout [N, HV, V, K] <-> linea's [N, HV, K, V])."""
    if is_torch(x):
        return x.transpose(-1, -2)
    return np.swapaxes(x, -1, -2)


def broadcast(x, shape):
    """x broadcast to shape without a copy (stride 0 where it repeats): fla's g_gamma as a [B, T, H] gate."""
    if is_torch(x):
        return x.expand(*shape)
    return np.broadcast_to(x, shape)


_NUMPY_NAMES = {np.dtype(n): n for n in ("float32", "float64", "float16", "int32", "int64")}
_NP_DTYPES = {n: d for d, n in _NUMPY_NAMES.items()}  # name -> numpy dtype, without np.dtype()'s parsing
_FLOATS = frozenset(STORAGE)
_TORCH_NAMES = {}  # torch dtype -> its name, without str()'s cost
if _torch is not None:
    _TORCH_NAMES = {_torch.float32: "float32", _torch.float64: "float64", _torch.bfloat16: "bfloat16",
                    _torch.float16: "float16"}
_CODES = {}  # torch dtype -> the extension's dtype code (python/src/tensors.hpp, described_dtype)
if _torch is not None:
    _CODES = {_torch.float32: 0, _torch.float64: 1, _torch.bfloat16: 2, _torch.float16: 3, _torch.int32: 4,
              _torch.int64: 5}


# The extension's private first item of a description (python/src/tensors.hpp): a tuple a caller passes as an array
# never carries it, so it is refused rather than read as an address.
_DESCRIPTION_TAG = _linea._description_tag


def for_kernel(x):
    """What the extension receives: numpy arrays as they are; a torch tensor as its description (the extension's
    tag, data pointer, shape, strides, dtype code, device index), read by the extension in ~1 µs where torch's
    __dlpack__ takes ~5 (and refuses tensors that need gradients). The caller keeps the tensor alive for the call."""
    if _torch is not None and isinstance(x, _torch.Tensor):
        code = _CODES.get(x.dtype)  # (complex dtypes, the only ones with a lazy conjugate bit, have no code)
        if code is None or x.is_neg():  # the extension names the dtype in its error; a lazy negation is
            return x.detach().resolve_neg()  # materialised (DLPack would export the memory un-negated)
        return (_DESCRIPTION_TAG, x.data_ptr(), x.shape, x.stride(), code, x.get_device())
    return x


def key_sum(k, cu_seqlens):
    """Σ_t k_t per sequence as [N, 1, H, K] (fla's z_state of linear_attn's normaliser), in float32 or float64."""
    acc = "float64" if dtype_name(k) == "float64" else "float32"
    k = cast(k, acc)
    if cu_seqlens is None:
        return k.sum(1, keepdims=True) if not is_torch(k) else k.sum(1, keepdim=True)
    bounds = [int(b) for b in (cu_seqlens.tolist() if is_torch(cu_seqlens) else list(cu_seqlens))]
    parts = [k[0, s:e].sum(0, keepdims=True) if not is_torch(k) else k[0, s:e].sum(0, keepdim=True)
             for s, e in zip(bounds[:-1], bounds[1:])]
    if is_torch(k):
        return _torch.stack(parts, 0)
    return np.stack(parts, 0)
