"""python -m linea.verify and the example examples/python/verify_my_kernel.py."""
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

import linea
import linea.verify

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "verify_my_kernel.py"


@pytest.mark.parametrize("op", linea.verify.OPS)
def test_linea_passes_its_own_verification(op):
    errors = linea.verify.verify(getattr(linea, f"chunk_{op}"), op, T=80, HV=4, H=2)
    assert set(errors) == {"o", "final_state"}
    assert all(e <= linea.verify.bound("float32", 80) for e in errors.values()), errors


def wrong_kernel(q, k, v, g, beta, **kw):
    """A kernel with a bug: it forgets the scale."""
    return linea.chunk_gated_delta_rule(q, k, v, g, beta, **{**kw, "scale": 1.0})


def test_command_line_reports_pass_and_fail(capsys):
    module = sys.modules[__name__].__name__
    assert linea.verify.main([f"{module}:wrong_kernel", "--op", "gated_delta_rule", "--shape", "1,40,2,16,8"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  o" in out
    assert linea.verify.main(["linea:chunk_gated_delta_rule", "--op", "gated_delta_rule", "--shape", "1,40,2,16,8",
                              "--dtype", "float64"]) == 0
    assert "PASS  final_state" in capsys.readouterr().out


def test_relative_error_of_nan_fails():
    assert not linea.verify.relative_error(np.array([np.nan]), np.array([1.0])) <= 1


def test_example_verifies_a_pytorch_kernel(capsys):
    pytest.importorskip("torch")
    ns = runpy.run_path(str(EXAMPLE))
    assert ns["main"]() == 0
    assert "FAIL" not in capsys.readouterr().out


def no_final_state(q, k, v, g, beta, **kw):
    """A kernel that returns no final state (None), as a forward-only kernel may."""
    return linea.chunk_gated_delta_rule(q, k, v, g, beta, **kw)[0], None


def test_a_final_state_of_none_is_not_compared(capsys):
    # It was read as an array: a 0-d NaN, then a shape error about an output of shape [] (before that: NaN).
    errors = linea.verify.verify(no_final_state, "gated_delta_rule", T=40)
    assert errors["final_state"] is None and errors["o"] <= linea.verify.bound("float32", 40)
    module = sys.modules[__name__].__name__
    assert linea.verify.main([f"{module}:no_final_state", "--op", "gated_delta_rule", "--shape", "1,40,2,16,8"]) == 0
    out = capsys.readouterr().out
    assert "PASS  o" in out and "SKIP  final_state  not returned (None)" in out and "nan" not in out.lower()
    with pytest.raises(ValueError, match="an output is None"):
        linea.verify.relative_error(None, np.zeros(3))
