#!/usr/bin/env bash
# py5's device call (#16, 2026-12-02 session 4): linear_attn's torch path against bench/cuda. Hypothesis: not the
# call but the board's state — bench/cuda's row is a ~25 ms burst, the Python rows run sustained (power limit, SM
# clock). Measured: bench/cuda as before (burst) and with --warm-ms 1000 (sustained); in one Python process the
# 8x4096 table sustained (each rule's call run 1000 ms first; torch and the module's C++ loop) against the
# sustained bench/cuda rows, then linear_attn and simple_gla as bursts (500 ms idle before every measurement)
# against the burst rows. SM clock, power and throttle reasons logged every 50 ms throughout.
# Binaries built on the CPU machine (.gpu/py5/build_dev.sh): linea_cuda_bench, python/linea/_linea (Python 3.12).
set -u
cd "$(dirname "$0")"; F=$PWD
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
T0=$(date +%s%N)
el() { echo "== $1 at $(date +%T.%N | cut -c1-12) ($(( ($(date +%s%N) - T0) / 1000000 )) ms)"; }
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader
Q=timestamp,clocks.sm,power.draw,power.draw.instant,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader > /dev/null 2>&1 || Q=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$Q --format=csv,noheader > /dev/null 2>&1 || Q=timestamp,clocks.sm,power.draw,temperature.gpu
nvidia-smi --query-gpu=$Q --format=csv -lms 50 > $OUT/clocks.csv 2>&1 &
CLK=$!
tar -xJf bins.tar.xz && ls -la bin python/linea/*.so | cut -c30-
el bench-burst
timeout 20 bin/linea_cuda_bench --chunk-only --v128-only --no-ccq > $OUT/cpp_burst.jsonl 2>&1; echo "rc $?"
el bench-steady
timeout 25 bin/linea_cuda_bench --chunk-only --v128-only --no-ccq --warm-ms 1000 > $OUT/cpp_steady.jsonl 2>&1; echo "rc $?"
for f in burst steady; do echo "bench/cuda $f: $(grep -o '"rule":"[a-z_]*".*"ms":[0-9.]*' $OUT/cpp_$f.jsonl | sed -E 's/"rule":"([a-z_]+)".*"ms":/\1 /' | tr '\n' ' ')"; done
el python
PYTHONPATH=$F/python:$F/bench timeout 50 python3 - > $OUT/python.md 2>&1 <<PY
import time, torch, linea, python_overhead as p
print("linea", linea.__file__, "cuda", linea._linea.has_cuda, "torch", torch.__version__, flush=True)
print("sustained at", time.strftime("%T"), flush=True)
p.large("$OUT/cpp_steady.jsonl", rounds=2, warm_ms=1000, variants=("torch", "loop"))
print("burst at", time.strftime("%T"), flush=True)
p.large("$OUT/cpp_burst.jsonl", rounds=2, idle_ms=500, variants=("torch", "loop"), rules=("linear_attn", "simple_gla"))
print("end at", time.strftime("%T"), flush=True)
PY
echo "python rc $?"
grep -E "^\| [a-z_]+ \||at [0-9]|chunk_|Error|error" $OUT/python.md | cut -d'|' -f2,3,7-10 | cut -c1-200
el done
kill $CLK
python3 - $OUT/clocks.csv <<'PY' || true
import sys, csv, collections
rows = list(csv.reader(open(sys.argv[1]), skipinitialspace=True))
print("per second with > 150 W:", rows[0])
sec = collections.OrderedDict()
for r in rows[1:]:
    try: clk, w = int(r[1].split()[0]), float(r[2].split()[0])
    except (ValueError, IndexError): continue
    sec.setdefault(r[0][11:19], []).append((clk, w, r[-1]))
for t, v in sec.items():
    if max(w for _, w, _ in v) > 150:
        print(t, f"{min(c for c, _, _ in v)}-{max(c for c, _, _ in v)} MHz, {min(w for _, w, _ in v):.0f}-{max(w for _, w, _ in v):.0f} W,",
              " ".join(sorted(set(x for _, _, x in v))))
PY
