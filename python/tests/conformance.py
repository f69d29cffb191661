"""The conformance vectors (../shared/conformance, format in its README.md) as keyword arguments of linea's Python
functions, and SPEC §5/§6's tolerances, stated once for the Python suite (as tests/support/tolerance.hpp)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

# SPEC §5 (forward) and §6 (gradients): relative error ‖x − ref‖ / ‖ref‖ against float64.
FORWARD_TOLERANCE = {"float64": 1e-12, "float32": 1e-5, "float32_long": 1e-4, "bfloat16": 1e-2, "float16": 1e-2}
GRADIENT_TOLERANCE = {"float64": 1e-10, "float32": 1e-4, "bfloat16": 2e-2, "float16": 2e-2}


def forward_tolerance(dtype: str, T: int = 0) -> float:
    return FORWARD_TOLERANCE["float32_long" if dtype == "float32" and T > 4096 else dtype]


def relative_error(x, ref) -> float:
    x = np.asarray(x, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    den = np.linalg.norm(ref)
    num = np.linalg.norm(x - ref)
    return float(num / den) if den > 0 else float(num)


def conformance_dir() -> Path:
    """LINEA_CONFORMANCE_DIR, or ../shared/conformance beside the checkout (as the C++ tests)."""
    env = os.environ.get("LINEA_CONFORMANCE_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared" / "conformance"


class Case:
    def __init__(self, directory: Path):
        self.dir = directory
        self.manifest = json.loads((directory / "manifest.json").read_text())
        self.op = self.manifest["op"]
        self.params = self.manifest["params"]
        self.label = f"{directory.parent.parent.name}/{self.op}/{directory.name}"

    def has(self, name: str) -> bool:
        return name in self.manifest["files"]

    def array(self, name: str) -> np.ndarray | None:
        f = self.manifest["files"].get(name)
        if f is None:
            return None
        data = np.fromfile(self.dir / f["file"], dtype=np.dtype(f["dtype"]).newbyteorder("<"))
        return data.reshape(f["shape"]).astype(np.dtype(f["dtype"]))

    @property
    def ccq(self) -> bool:
        return self.params.get("read") == "ccq"

    def function_name(self, form: str) -> str:
        return f"{form}_{self.op}"

    def call(self, form: str, convert=lambda x: x) -> tuple[list, dict]:
        """(positional, keyword) arguments of linea.<form>_<op> for this case; `convert` maps each array."""
        p, a = self.params, self.array
        c = lambda name: None if a(name) is None else convert(a(name))  # noqa: E731
        args = [c("q"), c("k"), c("v")]
        kw = {"scale": p.get("scale"), "initial_state": c("h0"), "output_final_state": True}
        op = self.op
        if op in ("simple_gla",):
            if p.get("g_gamma"):
                kw["g_gamma"] = c("g_gamma")
            else:
                kw["g"] = c("g")
        elif op == "gla":
            kw["g" if form == "chunk" else "gk"] = c("g")
        elif op == "delta_rule":
            args.append(c("beta"))
        elif op == "gated_delta_rule" and form == "fused_recurrent":  # fla's order there: g, gk, gv, beta
            kw.update(g=c("g"), beta=c("beta"))
        elif op in ("gated_delta_rule", "kda"):
            args += [c("g"), c("beta")]
        elif op == "gdn2":
            args += [c("g"), c("b"), c("w")]
        if op == "linear_attn":
            kw["normalize"] = bool(p.get("normalize", False))
        if p.get("use_qk_l2norm_in_kernel"):
            kw["use_qk_l2norm_in_kernel"] = True
        if p.get("use_gate_in_kernel"):
            kw.update(use_gate_in_kernel=True, A_log=c("A_log"), dt_bias=c("dt_bias"))
            if p.get("lower_bound") is not None:
                kw["lower_bound"] = p["lower_bound"]
        if self.has("cu_seqlens") or p.get("cu_seqlens"):
            cu = a("cu_seqlens")
            kw["cu_seqlens"] = convert(cu) if cu is not None else convert(np.asarray(p["cu_seqlens"], np.int64))
        if self.ccq:
            kw["ccq_lambda"] = c("lam")
            kw["ccq_weighting"] = p.get("ccq_weighting", "uniform")
            if kw["ccq_weighting"] == "decayed":
                kw["ccq_log_decay"] = c("ccq_g")
            if self.has("ccq_C0"):
                kw["ccq_initial_state"] = (c("ccq_C0"), c("ccq_m0"), c("ccq_z0"))
            kw["output_ccq_state"] = True
        return args, kw

    def truths(self) -> dict:
        t = {"o": self.array("o_ref64"), "ht": self.array("ht_ref64")}
        if self.ccq:
            t.update(C=self.array("ccq_C_ref64"), m=self.array("ccq_m_ref64"), z=self.array("ccq_z_ref64"))
        return t


def cases(gradients_only: bool = False) -> list[Case]:
    root = conformance_dir()
    found = sorted(p.parent for p in root.glob("*/*/*/manifest.json"))
    out = [Case(d) for d in found]
    return [c for c in out if c.dir.name.endswith("_grad")] if gradients_only else out


def outputs(result, case: Case) -> dict:
    """{o, ht[, C, m, z]} from what a function returned ((o, ht) or (o, ht, (C, m, z)); linear_attn's normalised
    ht is (S, z))."""
    o, ht = result[0], result[1]
    if isinstance(ht, tuple):
        ht = ht[0]
    out = {"o": o, "ht": ht}
    if case.ccq:
        out["C"], out["m"], out["z"] = result[2]
    return out
