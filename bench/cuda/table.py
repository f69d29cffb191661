#!/usr/bin/env python3
"""bench/cuda/table.py — joins linea_cuda_bench and fla_bench.py output (JSON lines) into one Markdown table.

usage: table.py linea.jsonl fla.jsonl
"""
import json
import sys


def indices_label(x):
    """How the decode row found its state: none, or a permutation given on the host or on the device."""
    if x in (False, "none"):
        return "none"
    return "permutation" if x is True else f"permutation ({x})"


def load(path):
    out = []
    try:
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
    except FileNotFoundError:
        pass
    return out


def ratio_text(fla_ms, linea_ms):
    return f"{fla_ms / linea_ms:.2f}" if fla_ms else "–"


def main(linea_path, fla_path):
    lin, fla = load(linea_path), load(fla_path)
    dev = next((r for r in lin if r["kind"] == "device"), {})
    fdev = next((r for r in fla if r["kind"] == "device"), {})
    peak = fdev.get("bf16_tflops")
    print(f"GPU: {dev.get('name', '?')} ({dev.get('sms', '?')} SMs); copy bandwidth {dev.get('copy_tbps', '?')} TB/s "
          f"(cudaMemcpy D2D, read+write; torch: {fdev.get('copy_tbps', '?')}); bf16 matmul "
          f"{peak if peak else '?'} TFLOP/s (torch 8192^3); fla {next((r.get('fla') for r in fla if r.get('fla')), '?')}")
    print()
    print("Chunkwise forward, B=8 T=4096 H=16 K=V=128, bf16 inputs, fp32 states (ms, median)")
    print()
    print("| rule | read | linea ms | fla Triton ms | fla / linea | TB/s | of copy | TFLOP/s | of bf16 mma | host µs/call |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    fms = {r["rule"]: r.get("ms") for r in fla if r["kind"] == "chunkwise"}
    for r in lin:
        if r["kind"] != "chunkwise":
            continue
        f = fms.get(r["rule"]) if r["read"] == "identity" else None
        ratio = f"{f / r['ms']:.2f}" if f else "–"
        frac = f"{r['tflops'] / peak:.3f}" if peak else "?"
        print(f"| {r['rule']} | {r['read']} | {r['ms']:.3f} | {f if f else '–'} | {ratio} | {r['tbps']:.2f} | "
              f"{r['copy_frac']:.2f} | {r['tflops']:.1f} | {frac} | {r.get('host_us', '?')} |")
    print()
    print("Decode step, B=256 H=16 K=V=128, bf16 inputs, fp32 state pool in place")
    print()
    print("| rule | state_indices | linea ms | TB/s | of copy | fla Triton ms | fla TB/s | fla / linea | host µs/call |")
    print("|---|---|---|---|---|---|---|---|---|")
    fd = next((r for r in fla if r["kind"] == "decode"), {})
    for r in lin:
        if r["kind"] != "decode":
            continue
        f = fd.get("ms") if r["rule"] == "gated_delta_rule" else None
        print(f"| {r['rule']} | {indices_label(r['indices'])} | {r['ms']:.4f} | {r['tbps']:.2f} | "
              f"{r['copy_frac']:.2f} | {f if f else '–'} | {fd.get('tbps', '–') if f else '–'} | "
              f"{ratio_text(f, r['ms'])} | {r.get('host_us', '?')} |")
    errs = [r for r in fla if "error" in r]
    for r in errs:
        print(f"\nfla {r['kind']} {r['rule']} failed: {r['error']}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
