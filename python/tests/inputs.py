"""Random inputs of fla's functions: linea.verify's (the inputs a user's kernel is checked on), under the tests'
names."""
from linea.verify import OPS as RULES  # noqa: F401
from linea.verify import random_inputs, to_torch  # noqa: F401


def random_call(rule, form, dtype, *, B=2, T=37, H=2, HV=None, K=16, V=8, seed=0):
    """(positional, keyword) arguments of linea.<form>_<rule> with random numpy inputs of the given dtype."""
    import numpy as np

    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    return random_inputs(rule, form, B=B, T=T, H=H, HV=HV, K=K, V=V, dtype=name, seed=seed)
