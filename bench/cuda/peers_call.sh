#!/usr/bin/env bash
# bench/cuda/peers_call.sh — linea's forward + backward and the peers a user would get, in one device call, inside a
# wall budget (issues #14, #15). Run from the repository root on the device, after linea's binaries are built:
#
#   PEERS_DIR=.gpu/peers11 bash bench/cuda/peers_call.sh        # carry [".gpu/peers11"]; results under $OUT
#
# What runs, each step in its own process under `timeout`, capped by what is left of PEERS_BUDGET (s, default 420):
#  1. install: PEERS_DIR/peers_site.tar.xz (bench/cuda/peers_site.sh: fla-core 0.6.0, flash-qla 0.1.3, tilelang
#     0.1.15, apache-tvm-ffi, z3-solver, installed for CPython 3.12 and pruned) unpacked into /tmp/peers_site;
#     versions → env.json
#  2. linea: `$LINEA_BENCH --backward` (gated_delta, delta, simple_gla, linear_attn, kda, gla at 8×4096, 2×16384, 1×32768)
#  3. warm: Triton's and tilelang's compiles, side by side (16 cores): one process per fla rule, one per FlashQLA
#     shape group, PEERS_WARM=1 (each autotuning configuration compiled and run once, not benchmarked, no
#     autotuning choice kept). Nothing is timed in this step, and nothing else runs on the GPU meanwhile.
#  4. timing, one process (each one costs ~10 s of imports): at each shape in turn (8×4096, 1×32768, 2×16384),
#     FlashQLA's forward and forward + backward (FQ_SHAPES), then fla's Triton path per rule (FLA_SHAPES, rules in
#     PEERS_RULES order); autotuning now benchmarks on an idle GPU with its kernels compiled in 3, and fla keeps its
#     choice on disk. Each (peer, rule, shape) is bounded by OP_CAP (an alarm: an error row, then the next one); a
#     process that dies is started again after what it finished, the one it died in recorded and left out.
#  5. FlashInfer's Hopper GDN prefill at FI_SHAPES, if PEERS_DIR holds fi_site.tar.xz and cutlass_so.tar.xz
#     (bench/cuda/flashinfer_site.sh; they do not fit one call beside peers_site.tar.xz)
#  6. fla with its default backends (FLA_DEFAULTS=1: its TileLang chunk_bwd_dqkwg on Hopper, FlashQLA for GDN) for
#     the rules whose Triton path refused in 4, at the first of FLA_SHAPES
# Out ($OUT): run.log (steps and their wall times), env.json, linea_backward.jsonl, peers.jsonl (every timing row,
# and a row for each step that timed out, failed or was skipped for lack of budget, with its error text),
# warm.jsonl (compile / autotune seconds per rule), stderr.txt (the last lines of each failing process), table.md
# (bench/cuda/peers_table.py: one row per rule and shape, linea beside each peer).
#
# Knobs: PEERS_STEPS (subset of "linea warm flashqla fla flashinfer fla-default"), PEERS_RULES, FLA_SHAPES,
# FQ_SHAPES, FI_SHAPES, LINEA_BENCH; caps in seconds: LINEA_CAP (90), WARM_CAP (150), OP_CAP (60, per peer × rule ×
# shape), DEFAULT_CAP (60, step 6), FI_CAP (90). Timing gets what is left after FI_CAP (when FlashInfer is carried) is
# set aside; step 6 runs on what timing leaves.
set -u
START=$(date +%s)
HERE=$(cd "$(dirname "$0")" && pwd)
PEERS_DIR=$(cd "${PEERS_DIR:-.gpu/peers11}" && pwd)
OUT=${OUT:-/tmp/peers_out}
BUDGET=${PEERS_BUDGET:-420}
STEPS=${PEERS_STEPS:-linea warm flashqla fla flashinfer fla-default}
RULES=${PEERS_RULES:-linear_attn simple_gla gla delta_rule gated_delta_rule kda gdn2}
FLA_SHAPES=${FLA_SHAPES:-8x4096 1x32768}
FQ_SHAPES=${FQ_SHAPES:-8x4096 2x16384 1x32768}
FI_SHAPES=${FI_SHAPES:-8x4096}
LINEA_BENCH=${LINEA_BENCH:-/tmp/b/bench/cuda/linea_cuda_bench}
LINEA_CAP=${LINEA_CAP:-90} WARM_CAP=${WARM_CAP:-150} OP_CAP=${OP_CAP:-60} DEFAULT_CAP=${DEFAULT_CAP:-60} FI_CAP=${FI_CAP:-90}
PY=$HERE/peers_train_bench.py
SITE=/tmp/peers_site LOGS=/tmp/peers_logs
rm -rf "$LOGS"; mkdir -p "$OUT" "$SITE" "$LOGS"
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/peers_cache/triton TILELANG_CACHE_DIR=/tmp/peers_cache/tilelang \
  TVM_FFI_CACHE_DIR=/tmp/peers_cache/tvm-ffi
has() { [[ " $STEPS " == *" $1 "* ]]; }
now() { echo $(( $(date +%s) - START )); }
log() { echo "[$(now) s] $*" | tee -a "$OUT/run.log"; }
first() { echo "${1%% *}"; }
rest() { [[ "$1" == *" "* ]] && echo "${1#* }" || echo ""; }
# A JSON row into peers.jsonl: record key=value ... (numbers stay numbers).
record() {
  python3 -c 'import json, sys
d = {}
for a in sys.argv[1:]:
    k, v = a.split("=", 1)
    try: v = int(v)
    except ValueError: pass
    d[k] = v
print(json.dumps(d))' "$@" >> "$OUT/peers.jsonl"
}
# The cap for a step: its own, or what is left of the budget less 5 s; 0 when under 10 s are left.
cap() { local c=$1 l=$(( BUDGET - $(now) - 5 )); [ "$l" -lt "$c" ] && c=$l; [ "$c" -lt 10 ] && c=0; echo "$c"; }
# step NAME WANT OUTFILE [VAR=value ...] -- command ...: run under timeout, rows to OUTFILE, a row for a failure.
step() {
  local name=$1 want=$2 outfile=$3; shift 3
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  local c; c=$(cap "$want")
  if [ "$c" = 0 ]; then log "$name: skipped (budget)"; record kind=skipped step="$name" error="budget spent"; return 1; fi
  local t0; t0=$(now); log "$name: start (cap $c s)"
  env "${envs[@]}" timeout -k 5 "$c" "$@" >> "$outfile" 2> "$LOGS/$name.err"; local rc=$?
  log "$name: rc $rc after $(( $(now) - t0 )) s"
  if [ $rc != 0 ]; then
    { echo "== $name (rc $rc)"; grep -v -i "warning" "$LOGS/$name.err" | tail -n 15 | cut -c1-400; } >> "$OUT/stderr.txt"
    local why="exit $rc"; [ $rc = 124 ] || [ $rc = 137 ] && why="timeout after $c s"
    record kind=failed step="$name" error="$why" stderr_tail="$(grep -v -i warning "$LOGS/$name.err" | tail -n 3 | cut -c1-300)"
  fi
  return $rc
}

# 1. install and versions
log "install from $PEERS_DIR"
tar -xJf "$PEERS_DIR/peers_site.tar.xz" -C "$SITE" || { log "no peers_site.tar.xz"; exit 1; }
export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
log "installed: $(du -sh $SITE | cut -f1)"
timeout 60 python3 - > "$OUT/env.json" 2> "$LOGS/env.err" <<'EOF'
import importlib, importlib.metadata as md, json, time
import torch, triton
d = dict(device=torch.cuda.get_device_name(0), torch=torch.__version__, triton=triton.__version__,
         dlpack_exchange_api=hasattr(torch.Tensor, "__dlpack_c_exchange_api__"))
for mod, dist in (("fla.ops", "fla-core"), ("flash_qla", "flash-qla"), ("tilelang", "tilelang"),
                  ("tvm_ffi", "apache-tvm-ffi"), ("z3", "z3-solver")):
    t0 = time.time()
    try:
        importlib.import_module(mod)
        d[dist] = md.version(dist)
    except Exception as e:
        d[dist] = f"import failed: {type(e).__name__}: {e}"[:300]
    d[dist + "_import_s"] = round(time.time() - t0, 1)
print(json.dumps(d))
EOF
log "env: $(cat "$OUT/env.json")"; grep -v -i warning "$LOGS/env.err" | tail -n 5 >> "$OUT/stderr.txt"

# 2. linea's forward + backward, alone on the GPU
if has linea; then
  if [ -x "$LINEA_BENCH" ]; then
    step linea "$LINEA_CAP" "$OUT/linea_backward.jsonl" -- "$LINEA_BENCH" --backward
  else
    log "linea: no binary at $LINEA_BENCH"; record kind=skipped step=linea error="no binary at $LINEA_BENCH"
  fi
fi

# 3. compiles side by side (no timing anywhere while they run)
if has warm; then
  c=$(cap "$WARM_CAP"); log "warm: start (cap $c s)"
  if [ "$c" != 0 ]; then
    has fla && for r in $RULES; do
      PEERS=fla RULES=$r SHAPES="$FLA_SHAPES" PEERS_WARM=1 timeout -k 5 "$c" python3 "$PY" \
        > "$LOGS/warm-fla-$r.jsonl" 2> "$LOGS/warm-fla-$r.err" &
    done
    if has flashqla; then  # the shapes after the first share kernels (block_DV 32): one process, in turn
      PEERS=flashqla SHAPES="$(first "$FQ_SHAPES")" PEERS_WARM=1 timeout -k 5 "$c" python3 "$PY" \
        > "$LOGS/warm-fq-1.jsonl" 2> "$LOGS/warm-fq-1.err" &
      [ -n "$(rest "$FQ_SHAPES")" ] && PEERS=flashqla SHAPES="$(rest "$FQ_SHAPES")" PEERS_WARM=1 timeout -k 5 "$c" \
        python3 "$PY" > "$LOGS/warm-fq-2.jsonl" 2> "$LOGS/warm-fq-2.err" &
    fi
    wait
    cat "$LOGS"/warm-*.jsonl >> "$OUT/warm.jsonl" 2> /dev/null
    n=$(echo $FLA_SHAPES | wc -w)
    has fla && for r in $RULES; do  # a rule whose compiles the cap cut: the timing step compiles the rest itself
      [ "$(grep -c . "$LOGS/warm-fla-$r.jsonl")" -lt "$n" ] && echo "{\"kind\": \"warm\", \"impl\": \"fla\", \"rule\": \"$r\", \"error\": \"cut by the warm cap ($c s)\"}" >> "$OUT/warm.jsonl"
    done
    for e in "$LOGS"/warm-*.err; do
      grep -q -E "Traceback|Error" "$e" && { echo "== $(basename "$e")"; grep -v -i warning "$e" | tail -n 8 | cut -c1-400; } >> "$OUT/stderr.txt"
    done
    log "warm: done, $(grep -c . "$OUT/warm.jsonl" 2> /dev/null || echo 0) rows"
  fi
fi

# 4.–7. timing: one process for FlashQLA and fla's Triton path at every shape (the shapes in order, FlashQLA first
# at each; fla's rules in PEERS_RULES order), each (peer, rule, shape) bounded by OP_CAP; a process that dies is
# started again after what it finished, the one it died in left out (at most 3 processes)
fi_carried=0; [ -f "$PEERS_DIR/fi_site.tar.xz" ] && [ -f "$PEERS_DIR/cutlass_so.tar.xz" ] && has flashinfer && fi_carried=1
reserve=0; [ $fi_carried = 1 ] && reserve=$FI_CAP  # step 6 gets only what timing leaves
peers=""; has flashqla && peers="flashqla"; has fla && peers="$peers fla"
if [ -n "$peers" ]; then
  : > "$LOGS/progress"
  for attempt in 1 2 3; do
    skip=$(sort -u "$LOGS/progress" | tr '\n' ' ')
    step "timing-$attempt" $(( BUDGET - $(now) - reserve )) "$OUT/peers.jsonl" PEERS="$peers" RULES="$RULES" \
      FLA_SHAPES="$FLA_SHAPES" FQ_SHAPES="$FQ_SHAPES" OP_CAP="$OP_CAP" PEERS_SKIP="$skip" PEERS_PROGRESS="$LOGS/progress" \
      -- python3 "$PY" && break
    python3 -c 'import json, sys
done = set()
for line in open(sys.argv[1]):
    try: d = json.loads(line)
    except ValueError: continue
    if "impl" in d and "rule" in d and "B" in d: done.add("%s:%s:%dx%d" % (d["impl"], d["rule"], d["B"], d["T"]))
begun = [l.strip() for l in open(sys.argv[2]) if l.strip()]
if begun and begun[-1] not in done:
    impl, rule, shape = begun[-1].split(":")
    B, T = shape.split("x")
    print(json.dumps(dict(kind="train", impl=impl, rule=rule, B=int(B), T=int(T),
                          error="the process ended inside this one (timeout or crash; stderr.txt)")))' \
      "$OUT/peers.jsonl" "$LOGS/progress" >> "$OUT/peers.jsonl"
    [ "$(cap 30)" = 0 ] && break
  done
fi

# 5. FlashInfer, when carried
if has flashinfer; then
  if [ $fi_carried = 1 ]; then
    mkdir -p /tmp/fisite && tar -xJf "$PEERS_DIR/fi_site.tar.xz" -C /tmp/fisite && tar -xJf "$PEERS_DIR/cutlass_so.tar.xz" -C /tmp/fisite
    step flashinfer "$FI_CAP" "$OUT/peers.jsonl" PYTHONPATH=/tmp/fisite:/tmp/fisite/nvidia_cutlass_dsl/dsl_packages \
      CHECK="2x1000" SHAPES="$FI_SHAPES" WARMUP=3 REPS=10 ROUNDS=3 -- python3 -W ignore "$HERE/flashinfer_bench.py"
  else
    log "flashinfer: not carried"; record kind=skipped step=flashinfer impl=flashinfer \
      error="not carried: fi_site.tar.xz + cutlass_so.tar.xz (55 MB) do not fit one call beside peers_site.tar.xz"
  fi
fi

# 6. fla's default backends where its Triton path refused
if has fla-default; then
  refused=$(python3 -c 'import json, sys
rules = []
for line in open(sys.argv[1]):
    try: d = json.loads(line)
    except ValueError: continue
    err = d.get("error", "")  # a refusal, not a timeout or a crash: those would only repeat
    if d.get("impl") == "fla" and err and "timeout" not in err and "process ended" not in err and "rule" in d \
            and d["rule"] not in rules:
        rules.append(d["rule"])
print(" ".join(rules))' "$OUT/peers.jsonl" 2> /dev/null)
  [ -n "$refused" ] && step fla-default "$DEFAULT_CAP" "$OUT/peers.jsonl" FLA_DEFAULTS=1 PEERS=fla RULES="$refused" \
    SHAPES="$(first "$FLA_SHAPES")" OP_CAP="$OP_CAP" -- python3 "$PY"
fi
python3 "$HERE/peers_table.py" "$OUT/linea_backward.jsonl" "$OUT/peers.jsonl" > "$OUT/table.md" 2>> "$OUT/stderr.txt"
cat "$OUT/table.md"
log "done"
