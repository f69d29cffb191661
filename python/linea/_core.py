"""One forward call: inputs by linea's argument names in, outputs allocated here, the extension runs linea.

`forward(op, form, x, opts, ...)` is what every public function ends in. With torch tensors that need gradients
it goes through `_autograd.LineaFunction` (linea's backward); otherwise it calls the extension directly."""
from __future__ import annotations

import contextlib
import contextvars
import operator
import os
from dataclasses import dataclass, field

from numpy import bool_ as _np_bool
from numpy import ndarray as _ndarray

from . import _arrays as A
from . import _linea

# The backend of the calls made in this context: "cpu" (linea.*) or "reference" (linea.reference.*).
_backend = contextvars.ContextVar("linea_backend", default="cpu")
def _thread_count(n, what: str) -> int:
    """n as a thread count: an integer in [0, 2³¹) (the library's int), else an error naming `what`."""
    if isinstance(n, str):
        try:
            n = int(n)
        except ValueError:
            raise ValueError(f"linea: {what} = {n!r}: the thread count must be an integer >= 0") from None
    try:
        if isinstance(n, bool):
            raise TypeError
        n = operator.index(n)  # (an int, a numpy integer, a 0-d integer tensor)
    except TypeError:
        raise TypeError(f"linea: {what} = {n!r}: the thread count must be an integer >= 0") from None
    if not 0 <= int(n) < 2**31:
        raise ValueError(f"linea: {what} = {n}: the thread count must be >= 0 and < 2**31")
    return int(n)


_threads = _thread_count(os.environ.get("LINEA_NUM_THREADS", "0"), "LINEA_NUM_THREADS")  # 0: one per hardware thread


def set_num_threads(n: int) -> None:
    """Threads of the CPU backend over (sequence, value head); 0 (the default) uses every hardware thread."""
    global _threads
    _threads = _thread_count(n, f"set_num_threads({n!r})")


def get_num_threads() -> int:
    return _threads


@contextlib.contextmanager
def using_backend(name: str):
    token = _backend.set(name)
    try:
        yield
    finally:
        _backend.reset(token)


# Inputs by linea's field names, in one fixed order (the autograd function's positional tensors), with the name of
# their gradient in linea::gradients and whether they are states (float32 / float64) rather than storage type.
INPUTS = (
    ("q", "dq", False), ("k", "dk", False), ("v", "dv", False), ("g", "dg", False), ("gk", "dgk", False),
    ("beta", "dbeta", False), ("b", "db", False), ("w", "dw", False), ("initial_state", "d_initial_state", True),
    ("gate.A_log", "dA_log", None), ("gate.dt_bias", "ddt_bias", None), ("ccq.lambda", "dlambda", False),
    ("ccq.log_decay", "dccq_log_decay", False), ("ccq.C0", "dC0", True), ("ccq.m0", "dm0", True),
    ("ccq.z0", "dz0", True),
)
INDEX_INPUTS = ("cu_seqlens", "state_indices")


@dataclass
class Options:
    """The scalar options of one call (linea::arguments' option fields). Those of options() are shared by every
    call with the same values: treat them as immutable."""
    form: str = "recurrent"  # recurrent | chunkwise | step
    read: str = "identity"  # identity | ccq_uniform | ccq_decayed
    scale: float | None = None
    qk_l2norm: bool = False
    beta_act: int = 0  # 0 none, 1 sigmoid, 2 two_sigmoid
    normalize: bool = False
    lower_bound: float | None = None
    chunk_size: int = 64
    _natives: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def native(self, backend: str, dtype: str, stream: int = 0):
        """The extension's options object. Built once per (options, backend, dtype, threads) and kept (setting its
        twelve fields costs more than the call's other Python work), the stream set per call."""
        key = (backend, dtype, _threads)
        o = self._natives.get(key)
        if o is None:
            o = _linea.options()
            o.form, o.read, o.backend, o.dtype = self.form, self.read, backend, dtype
            o.scale = None if self.scale is None else float(self.scale)
            o.qk_l2norm, o.beta_act, o.normalize = bool(self.qk_l2norm), int(self.beta_act), bool(self.normalize)
            o.lower_bound = None if self.lower_bound is None else float(self.lower_bound)
            o.chunk_size, o.threads = int(self.chunk_size), _threads
            self._natives[key] = o
        if o.stream != stream:
            o.stream = stream
        return o


_options: dict = {}


def options(form: str, read: str = "identity", scale=None, qk_l2norm: bool = False, beta_act: int = 0,
            normalize: bool = False, lower_bound=None, chunk_size: int = 64) -> Options:
    """The Options of these values: one object per distinct set, kept (a call builds none)."""
    values = (form, read, scale, qk_l2norm, beta_act, normalize, lower_bound, chunk_size)
    key = values + (type(scale), type(lower_bound), type(chunk_size))
    try:
        o = _options.get(key)
    except TypeError:  # an unhashable option (an array, a list): taken or named below
        o = None
    if o is None:  # (a miss: the scalar options as Python numbers, so that what is accepted does not depend on what
        # is cached — a key holds their types too: True == 1 == 1+0j would otherwise find 1's options unchecked)
        scale, lower_bound = _real("scale", scale), _real("lower_bound", lower_bound)
        chunk_size = _integer("chunk_size", chunk_size)
        values = (form, read, scale, qk_l2norm, beta_act, normalize, lower_bound, chunk_size)
        key = values + (type(scale), type(lower_bound), type(chunk_size))
        o = _options.get(key)
        if o is None:
            if len(_options) > 1024:  # options that vary call by call (a scale per call): keep the cache bounded
                _options.clear()
            o = _options[key] = Options(*values)
    return o


def _real(name: str, x):
    """A real-number option (or None) as a float: anything float() takes but text, truth values and complex
    numbers (scale=True would read as 1.0)."""
    if x is None:
        return None
    kind = getattr(getattr(x, "dtype", None), "kind", None)  # (numpy; a torch tensor has is_complex)
    if (isinstance(x, (str, bytes, complex, bool)) or kind in ("c", "b")  # (numpy's bool_ has kind "b")
            or (hasattr(x, "is_complex") and x.is_complex())):
        raise TypeError(f"linea: argument '{name}' = {x!r} is not a real number")
    try:
        return float(x)
    except (TypeError, ValueError):
        raise TypeError(f"linea: argument '{name}' = {x!r} is not a real number") from None


def _integer(name: str, x) -> int:
    """An integer option as an int: an integer, or a float with an integral value (so 64.0 is 64, 32.7 an error);
    not a truth value."""
    if not isinstance(x, (str, bytes, bool, _np_bool)):
        try:
            return operator.index(x)
        except TypeError:
            try:
                f = float(x)
            except (TypeError, ValueError):
                f = None
            if f is not None and f.is_integer():
                return int(f)
    raise TypeError(f"linea: argument '{name}' = {x!r} is not an integer")


def _rank(x, name: str, rank: int, what: str):
    shape = tuple(x.shape)
    if len(shape) != rank:
        raise ValueError(f"linea: argument '{name}' has shape {list(shape)}; expected {what}")
    return shape


def output_shapes(x, opts: Options):
    """The shapes of o, the states [N, HV, K, V] and the CCQ statistics, from q and v (linea checks the rest)."""
    if x.get("v") is None:  # (q and k: checked by prepare and by linea; v is read here first)
        raise ValueError("linea: argument 'v' is missing: values [B, T, HV, V] are required")
    sq, sv = x["q"].shape, x["v"].shape
    if len(sq) != 4:
        _rank(x["q"], "q", 4, "[B, T, H, K]")
    if len(sv) != 4:
        _rank(x["v"], "v", 4, "[B, T, HV, V]")
    B, T, H, K = sq
    HV, V = sv[2], sv[3]
    cu = x.get("cu_seqlens")
    if x.get("state_indices") is not None:  # the decode step's pool: the states given are updated in place
        N = None
    elif cu is not None:
        if len(getattr(cu, "shape", (0,))) != 1:
            raise ValueError(f"linea: argument 'cu_seqlens' has shape {list(cu.shape)}; expected one dimension, the "
                             "N + 1 offsets [0, ..., T]")
        N = len(cu) - 1
        if N < 1:  # (an empty array would read as no cu_seqlens at all)
            raise ValueError(f"linea: argument 'cu_seqlens' has {len(cu)} entries; expected the N + 1 >= 2 offsets "
                             "[0, ..., T] of N >= 1 sequences")
    else:
        N = B
    return (B, T, HV, V), N, HV, K, V


# Inputs that fla keeps in float32 next to 16-bit q, k, v (its layers compute gates and β in float32).
GATES = ("g", "gk", "beta", "b", "w", "ccq.lambda", "ccq.log_decay")


def compute_dtype(storage: str, backend: str, read: str = "identity", gates_float32: bool = False) -> str:
    """What the extension computes in: float64 for the reference; on the CPU, float32 for 16-bit inputs, which are
    widened here and whose o is rounded back (bit for bit linea's native 16-bit path on the CPU:
    python/src/dispatch.hpp); on CUDA the input dtype, but float32 for 16-bit inputs given float32 gates (fla's
    mix: rounding the gates to 16 bits would lose the decays' precision) and float16 with the CCQ read (no such
    kernels)."""
    if backend == "reference":
        return "float64"
    if backend == "cuda":
        if storage == "float64":
            raise TypeError("linea: the CUDA backend takes float32, bfloat16 or float16 tensors; float64 runs on the "
                            "CPU (linea.reference.*, or .cpu() tensors)")
        widen = storage == "float16" and read != "identity" or storage != "float32" and gates_float32
        return "float32" if widen else storage
    return "float32" if storage in ("bfloat16", "float16") else storage


# What each argument name is to prepare(): an input in the call's dtype, a state (or CCQ statistic), a gate
# parameter (float32), or an index array.
_INPUT, _STATE, _PARAM, _INDEX = range(4)
_KIND = {name: (_PARAM if is_state is None else _STATE if is_state else _INPUT) for name, _, is_state in INPUTS}
_KIND.update(cu_seqlens=_INDEX, state_indices=_INDEX)
_INDEX_DTYPES = {"cu_seqlens": ("int64", "int32"), "state_indices": ("int32",)}
_HALF = ("bfloat16", "float16")


def prepare(x: dict, storage: str, backend: str, read: str = "identity") -> tuple[dict, str]:
    """Inputs as the kernel takes them, in compute_dtype; states and CCQ statistics in the state type (fla accepts
    any float dtype for h0); gate parameters in float32. One pass over the arguments given (this runs every call:
    bench/python_overhead.py)."""
    gates_float32 = storage in _HALF and any(
        x.get(n) is not None and A.dtype_name(x[n]) == "float32" for n in GATES)
    compute = compute_dtype(storage, backend, read, gates_float32)
    widen = compute != storage
    state = "float64" if compute == "float64" else "float32"
    q = x["q"]
    # The decode step updates its pool in place: a copy in another dtype would lose the update.
    step = x.get("state_indices") is not None
    device = backend == "cuda"
    out = {}
    for name, v in x.items():
        if v is None:
            continue
        if type(v) is not _ndarray:  # (every array argument passes here; g_gamma is checked before its broadcast)
            A.expect_unmasked(v, name)
        kind = _KIND[name]
        if kind == _INPUT:
            if widen:
                # Widened here, so linea's own dtype check would see float32 everywhere: a k or v in another dtype
                # than q (or a gate in neither q's nor float32) is refused as it is without widening.
                A.shape_of(v, name)  # (a list: the error the extension gives unwidened)
                got = A.dtype_name(v)
                if got != storage and not (got == "float32" and name in GATES):
                    raise TypeError(f"linea: argument '{name}' has dtype {got}; expected {storage}"
                                    + (" or float32" if name in GATES else "") + " (the dtype of q)")
                v = A.cast(v, compute)
        elif kind == _STATE:
            if not step:
                v = A.cast(v, state, like=q, name=name)
        elif kind == _PARAM:
            v = A.cast(v, "float32", like=q, name=name)
        else:
            v = A.index_array(v, _INDEX_DTYPES[name], name, on_device=device)
        out[name] = v
    return out, compute


# The decode step hands linea its pools as both the initial and the final states (updated in place), and linea's
# checks of an output (writable, one element per position) name the output: the caller passed the initial ones.
_POOL_NAMES = (("'final_state'", "'initial_state'"), ("'ccq.C'", "'ccq.C0'"), ("'ccq.m'", "'ccq.m0'"),
               ("'ccq.z'", "'ccq.z0'"))


def name_pools_as_given(e: Exception) -> None:
    """An error of a decode step's extension call, rewritten in place to name the pools as the caller gave them."""
    if e.args and isinstance(e.args[0], str):
        message = e.args[0]
        for output, given in _POOL_NAMES:
            message = message.replace(output, given)
        e.args = (message,) + e.args[1:]


def run_kernel(op: str, x: dict, opts: Options, backend: str, storage: str, want_final: bool, want_ccq: bool):
    """Allocates the outputs, runs linea's forward, returns (o, final_state or None, (C, m, z) or None). The
    arrays passed (x and the outputs, held here) outlive the extension's call."""
    q = x["q"]
    o_shape, N, HV, K, V = output_shapes(x, opts)
    state = "float64" if storage == "float64" else "float32"
    o = A.empty(q, o_shape, storage, "o")
    final = stats = None
    if opts.form == "step":  # the pool given is updated in place (fla's inplace_final_state)
        final = x.get("initial_state")
        if opts.read != "identity" and x.get("ccq.C0") is not None:
            stats = (x["ccq.C0"], x["ccq.m0"], x["ccq.z0"])
    else:
        if want_final:
            final = A.empty(q, (N, HV, K, V), state, "final_state")
        if want_ccq:
            stats = (A.empty(q, (N, HV, K, K), state, "ccq.C"), A.empty(q, (N, HV, K), state, "ccq.m"),
                     A.empty(q, (N, HV), state, "ccq.z"))
    arrays = dict(x)
    arrays["o"] = o
    if final is not None:
        arrays["final_state"] = final
    if stats is not None:
        arrays["ccq.C"], arrays["ccq.m"], arrays["ccq.z"] = stats
    if A.is_torch(q):  # numpy arrays go as they are; torch tensors as their descriptions
        arrays = {name: A.for_kernel(v) for name, v in arrays.items()}
    try:
        _linea.forward(op, arrays, opts.native(backend, storage, A.stream_of(q) if backend == "cuda" else 0))
    except (ValueError, TypeError) as e:
        if opts.form == "step":
            name_pools_as_given(e)
        raise
    return o, (final if want_final else None), (stats if want_ccq else None)


def _reference_of_device_tensors(op: str, x: dict, opts: Options, want_final: bool, want_ccq: bool):
    """linea.reference.* with CUDA tensors: the float64 oracle runs on the host; outputs return to q's device."""
    device = x["q"].device
    host = {k: (v.cpu() if A.is_torch(v) else v) for k, v in x.items()}
    o, final, stats = forward(op, host, opts, want_final, want_ccq)
    move = lambda t: None if t is None else t.to(device)  # noqa: E731
    return move(o), (tuple(move(s) for s in final) if isinstance(final, tuple) else move(final)), \
        (None if stats is None else tuple(move(s) for s in stats))


def forward(op: str, x: dict, opts: Options, want_final: bool = False, want_ccq: bool = False):
    """o, final state (None unless asked for) and CCQ statistics (None unless asked for) of one call."""
    q = x["q"]
    given = A.storage_of(q)
    backend = _backend.get()
    if A.is_cuda(q):
        if backend == "reference":
            return _reference_of_device_tensors(op, x, opts, want_final, want_ccq)
        backend = "cuda"
    x, storage = prepare(x, given, backend, opts.read)
    result = None
    if A.is_torch(q) and opts.form != "step":
        from . import _autograd

        if _autograd.needs_grad(x):
            result = _autograd.apply(op, x, opts, backend, storage, want_final, want_ccq)
    if result is None:
        result = run_kernel(op, x, opts, backend, storage, want_final, want_ccq)
    o, final, stats = result
    if backend != "reference" and given != storage:  # 16-bit inputs computed in float32: o in their dtype
        o = A.cast(o, given)
    return o, final, stats
