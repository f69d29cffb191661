"""Runs fla's own op tests (flash-linear-attention's tests/ops/test_*.py, not part of linea) with linea's functions
in place of fla's, to see which of fla's checks linea passes.

    python tools/run_fla_tests.py chunk DIR_OR_FILES... [-- pytest arguments]
    python tools/run_fla_tests.py fused_recurrent DIR_OR_FILES... [-- pytest arguments]

One form is replaced per run (fla's chunk_<op> by linea.chunk_<op>, or fla's fused_recurrent_<op> by
linea.fused_recurrent_<op>) and only the tests named after that form are selected, so every selected test compares
linea against fla's own reference (its naive PyTorch recurrence, or fla's other form) rather than linea against
itself. fla (and its test files, fetched from its repository) must be importable; linea replaces the names in
fla.ops.<op> and in the submodules fla's tests import them from (fla.ops.<op>.chunk, .fused_recurrent) before
pytest imports the tests.
"""
from __future__ import annotations

import importlib
import sys

import linea

# linea's op names and fla's packages under fla.ops.
PACKAGES = {"linear_attn": "linear_attn", "simple_gla": "simple_gla", "gla": "gla", "delta_rule": "delta_rule",
            "gated_delta_rule": "gated_delta_rule", "kda": "kda", "gdn2": "gdn2"}
# pytest -k expressions selecting the tests of one form (fla's names: test_chunk*, test_fused_recurrent*).
SELECT = {"chunk": "test_chunk and not fused_chunk", "fused_recurrent": "test_fused_recurrent"}


def patch(form: str) -> list[str]:
    """Puts linea.<form>_<op> wherever fla's tests import fla's from; returns what was replaced."""
    replaced = []
    for op, package in PACKAGES.items():
        name = f"{form}_{op}"
        ours = getattr(linea, name)
        for module in (f"fla.ops.{package}", f"fla.ops.{package}.{form}"):
            try:
                m = importlib.import_module(module)
            except ImportError:
                continue
            if hasattr(m, name):
                setattr(m, name, ours)
                replaced.append(f"{module}.{name}")
    return replaced


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in SELECT:
        print(__doc__)
        return 2
    form, rest = argv[0], argv[1:]
    paths, extra = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest else (rest, [])
    replaced = patch(form)
    print(f"run_fla_tests: linea in place of {len(replaced)} fla names: {', '.join(replaced)}", flush=True)
    import pytest

    return pytest.main([*paths, "-k", SELECT[form], "-p", "no:cacheprovider", *extra])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
