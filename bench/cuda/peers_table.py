#!/usr/bin/env python3
"""bench/cuda/peers_table.py LINEA_JSONL PEERS_JSONL — one markdown table of forward and forward + backward (ms) per
rule and shape: linea (`linea_cuda_bench --backward`) beside fla's Triton path, FlashQLA, fla's default backends
(bench/cuda/peers_train_bench.py rows) and FlashInfer's prefill (forward only, bench/cuda/flashinfer_bench.py rows). A peer's error is shown in place of its times (first 60 characters)."""
import json
import sys

ALIASES = {"additive": "linear_attn", "delta": "delta_rule", "gated_delta": "gated_delta_rule"}


def rows(path):
    try:
        with open(path) as f:
            for line in f:
                try:
                    yield json.loads(line)
                except ValueError:
                    pass
    except OSError:
        return


def main(linea_path, peers_path):
    cells, keys = {}, []
    def put(rule, B, T, impl, text):
        key = (rule, B, T)
        if key not in keys:
            keys.append(key)
        cells[key, impl] = text
    for d in rows(linea_path):
        if d.get("kind") == "backward":
            put(d["rule"], d["B"], d["T"], "linea", f"{d['fwd_ms']:.3f} / {d['fwd_bwd_ms']:.2f}")
    impls = ["linea", "fla", "flashqla", "fla-default", "flashinfer"]
    for d in rows(peers_path):
        if d.get("kind") == "prefill" and "B" in d:  # FlashInfer's forward only
            put("gated_delta_rule", d["B"], d["T"], "flashinfer",
                f"{d['ms']:.3f} / –" if "ms" in d else "failed: " + d.get("error", "?")[:60].replace("|", "/"))
            continue
        if d.get("kind") != "train" or "rule" not in d or "B" not in d:
            continue
        d["rule"] = ALIASES.get(d["rule"], d["rule"])
        text = (f"{d['fwd_ms']:.3f} / {d['fwd_bwd_ms']:.3f}" if "fwd_ms" in d
                else "refused/failed: " + d.get("error", "?")[:60].replace("|", "/"))
        put(d["rule"], d["B"], d["T"], d["impl"], text)
    keys.sort(key=lambda k: (-k[1], k[0]))
    print("| rule | B×T | " + " | ".join(f"{i} fwd / fwd+bwd (ms)" for i in impls) + " |")
    print("|---|---|" + "---|" * len(impls))
    for rule, B, T in keys:
        print(f"| {rule} | {B}×{T} | " + " | ".join(cells.get(((rule, B, T), i), "–") for i in impls) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
