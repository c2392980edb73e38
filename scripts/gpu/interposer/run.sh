#!/usr/bin/env bash
# Transparency and overhead of the CUDA interposer on a GPU machine.
#
#   scripts/gpu/interposer/run.sh [--quick] ["calls transparency ab overhead" | all]
#
# Needs target/release/baton and target/release/libbaton_interposer.so (build them on a machine
# with Rust: `cargo build --release -p baton-cli -p baton-interposer`), nvcc, and Python with
# PyTorch/torchvision, CuPy, JAX and Triton. Writes everything under $OUT (default ./out):
# raw JSON per run, logs, and summary.json; prints a summary table last.
#
# Transparency: each app runs natively twice (once under an independent CUPTI launch counter)
# and under `baton run` twice: with the default launch window, and with a window of 2 commands
# so most launches are deferred (deep-copied and launched by the worker). Results must match
# the native checksum bit for bit, and Baton's kernel count must equal the CUPTI count.
# Overhead: empty-kernel launch loop and launch+sync round trip, and ResNet-50 inference and
# training step times, native and under Baton (several ways) alternately in the same run.
# APPS_ONLY="jax cupy" limits the transparency apps; REPS sets the overhead repetitions.
# ab: Baton's added cost per launch measured inside one process (launch_ab.cu): batches
# alternate between the real cuLaunchKernel and the one resolved by name (Baton's hook under
# `baton run`; natively the same function, the control). The steadiest overhead measure here.
# AB_EVICT_KB="0 4096" also runs it with that much memory written before each launch (cold
# caches, as between a framework's launches); AB_REPS sets the repetitions (default 3);
# AB_MODES picks among native, baton, local; AB_LIBS="before=PATH after=PATH" compares
# interposer builds in the same run, interleaved (default: the one BATON_LIB names).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
QUICK=0; [ "${1:-}" = "--quick" ] && { QUICK=1; shift; }
PART=${1:-all}
BATON=${BATON_BIN:-$ROOT/target/release/baton}
LIB=${BATON_LIB:-$ROOT/target/release/libbaton_interposer.so}
AB_LIBS=${AB_LIBS:-current=$LIB}
APPS=$HERE   # this check's programs; launch_counter.c is shared, in scripts/gpu/apps
W=$(mktemp -d)
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
say() { echo "== $*"; }

say machine
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
python3 - > "$OUT/machine.json" <<PY
import json, platform, subprocess, torch
smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
print(json.dumps({"gpu": smi, "torch": torch.__version__, "cuda": torch.version.cuda,
                  "kernel": platform.release(), "commit": "${BATON_COMMIT:-unknown}"}))
PY
[ -x "$BATON" ] && [ -f "$LIB" ] || { echo "missing $BATON or $LIB"; exit 1; }
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}

has() { [ "$PART" = all ] || [[ " $PART " == *" $1 "* ]]; }

say build
if has transparency || has overhead; then
  nvcc -O2 -arch=sm_90 -o "$W/cuda_app" "$APPS/cuda_app.cu" 2>&1 | tail -3
  nvcc -O2 -arch=sm_90 -o "$W/launch_overhead" "$APPS/launch_overhead.cu" 2>&1 | tail -3
fi
has ab && { nvcc -O2 -arch=sm_90 -o "$W/launch_ab" "$APPS/launch_ab.cu" -ldl 2>&1 | tail -3; }
if has calls || has transparency; then
  CUPTI_INC=$(ls -d "$CUDA_HOME"/extras/CUPTI/include "$CUDA_HOME"/targets/x86_64-linux/include 2>/dev/null | head -1)
  CUPTI_LIB=$(dirname "$(find "$CUDA_HOME" / -name 'libcupti.so*' 2>/dev/null | head -1)")
  gcc -O2 -shared -fPIC -I"$CUPTI_INC" -o "$W/launch_counter.so" "$ROOT/scripts/gpu/apps/launch_counter.c" -L"$CUPTI_LIB" -lcupti -Wl,-rpath,"$CUPTI_LIB" 2>&1 | tail -3
  [ -f "$W/launch_counter.so" ] && echo "CUPTI counter built ($CUPTI_LIB)" || echo "CUPTI counter unavailable"
fi

last_json() { grep '^{' "$1" | tail -1; }

# run NAME MODE CMD... : MODE is native | counted | baton | baton-small
run() {
  local name=$1 mode=$2; shift 2
  local log="$OUT/run_${name}_${mode}.log"
  local t0=$(date +%s.%N)
  case $mode in
    native) "$@" > "$log" 2>&1 ;;
    counted) LD_PRELOAD="$W/launch_counter.so" LAUNCH_COUNT_OUT="$W/count_$name.json" "$@" > "$log" 2>&1 ;;
    baton) BATON_REPORT="$W/report_${name}_$mode.json" "$BATON" run -- "$@" > "$log" 2>&1 ;;
    baton-small) BATON_REPORT="$W/report_${name}_$mode.json" "$BATON" run --threshold 2 --batch 1 --keep-window -- "$@" > "$log" 2>&1 ;;
    traced) BATON_LOG=baton_interposer=trace BATON_REPORT="$W/report_${name}_$mode.json" "$BATON" run --threshold 2 --batch 1 --keep-window -- "$@" > "$log" 2>&1
            grep -o 'symbol=[A-Za-z0-9_]*' "$log" | sort | uniq -c | sort -rn > "$OUT/${name}_symbols.txt" ;;
  esac
  local rc=$?
  local t1=$(date +%s.%N)
  python3 - "$name" "$mode" "$rc" "$t0" "$t1" "$log" "$W" >> "$OUT/transparency.jsonl" <<'PY'
import json, os, sys
name, mode, rc, t0, t1, log, w = sys.argv[1:]
lines = [l for l in open(log, errors="replace") if l.startswith("{")]
rec = {"app": name, "mode": mode, "rc": int(rc), "wall_s": float(t1) - float(t0),
       "result": json.loads(lines[-1]) if lines else None}
for key, path in (("baton_report", f"{w}/report_{name}_{mode}.json"), ("cupti", f"{w}/count_{name}.json")):
    if os.path.exists(path) and (mode.startswith("baton") or key == "cupti" and mode == "counted"):
        rec[key] = json.loads(open(path).read().splitlines()[-1])
print(json.dumps(rec))
PY
  echo "$name/$mode rc=$rc $(last_json "$log" | cut -c1-160)"
}

if has calls; then
say "driver calls each app really makes (CUPTI), native"
for app in ${CALLS_APPS:-jax}; do
  case $app in
    jax) cmd="python3 $APPS/jax_app.py" ;;
    torch_infer) cmd="python3 $APPS/torch_app.py infer" ;;
    cupy) cmd="python3 $APPS/cupy_app.py" ;;
    triton) cmd="python3 $APPS/triton_app.py" ;;
    cuda_app) cmd="$W/cuda_app" ;;
  esac
  # shellcheck disable=SC2086
  LD_PRELOAD="$W/launch_counter.so" LAUNCH_COUNT_ALL=1 LAUNCH_COUNT_OUT="$W/calls_$app.json" $cmd > /dev/null 2>&1
  python3 -c "import json,sys; d=json.load(open('$W/calls_$app.json')); d['app']='$app'; print(json.dumps(d))" >> "$OUT/calls.jsonl"
done
fi

if has transparency; then
say transparency
rm -f "$OUT/transparency.jsonl"
declare -A CMD=(
  [cuda_app]="$W/cuda_app"
  [torch_infer]="python3 $APPS/torch_app.py infer"
  [torch_train]="python3 $APPS/torch_app.py train"
  [cupy]="python3 $APPS/cupy_app.py"
  [jax]="python3 $APPS/jax_app.py"
  [triton]="python3 $APPS/triton_app.py"
)
ORDER=${APPS_ONLY:-"cuda_app torch_infer torch_train cupy jax triton"}
[ $QUICK = 1 ] && ORDER="cuda_app torch_infer"
for app in $ORDER; do
  MODES="native counted baton baton-small"
  [ "$app" = jax ] && [ -n "${TRACE_JAX:-}" ] && MODES="$MODES traced"
  for mode in $MODES; do
    # shellcheck disable=SC2086
    run "$app" "$mode" ${CMD[$app]}
  done
done

fi

if has ab; then
say "in-process A/B: the real cuLaunchKernel vs the one resolved by name, batches alternating"
rm -f "$OUT/ab.jsonl"
export BATON_SOCKET="$W/baton.sock"
for r in $(seq ${AB_REPS:-3}); do
  for kb in ${AB_EVICT_KB:-0}; do
    # Cold launches are timed one by one: fewer, smaller batches keep the run short.
    if [ "$kb" = 0 ]; then args="400"; else args="100"; fi
    for mode in ${AB_MODES:-native baton local}; do
      libs=$AB_LIBS
      [ "$mode" = native ] && libs="-=-"
      for lib in $libs; do
        name=${lib%%=*} path=${lib#*=}
        for stream in legacy created; do
          if [ "$kb" = 0 ]; then a="$args $stream"; else a="$args $stream 64 $kb"; fi
          case $mode in
            native) taskset -c 4,5 "$W/launch_ab" $a ;;
            baton) "$BATON" run --interposer "$path" -- taskset -c 4,5 "$W/launch_ab" $a ;;
            local) "$BATON" run --local --interposer "$path" -- taskset -c 4,5 "$W/launch_ab" $a ;;
          esac | grep '^{' | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); d.update(mode='$mode', lib='$name', rep=$r, evict_kb=$kb); print(json.dumps(d))" >> "$OUT/ab.jsonl"
        done
      done
    done
  done
done
fi

if has overhead; then
say overhead
rm -f "$OUT/overhead.jsonl"
# Modes: native; passthrough (interposed, BATON_ENABLE=off: the cost of the hooks alone);
# baton (`baton run`, scheduled by the daemon); local (`baton run --local`); keep (`baton run
# --keep-window`: the window kept although nothing could suspend the program).
REPS=${REPS:-3}; [ $QUICK = 1 ] && REPS=1
TORCH_REPS=${TORCH_REPS:-$REPS}; TRAIN_REPS=${TRAIN_REPS:-1}
export BATON_SOCKET="$W/baton.sock"
under() {
  local mode=$1; shift
  case $mode in
    native) "$@" ;;
    passthrough) BATON_ENABLE=off "$BATON" run -- "$@" ;;
    baton) "$BATON" run -- "$@" ;;
    local) "$BATON" run --local -- "$@" ;;
    keep) "$BATON" run --keep-window -- "$@" ;;
  esac
}
# Tags a result line with its mode and round, and the interposer's report (what it deferred,
# how many sync points it recorded) when there is one.
tag() {
  python3 -c "
import json, os, sys
d = json.loads(sys.stdin.read()); d.update(mode='$1', rep=$2)
p = '$W/report.json'
if os.path.exists(p):
    d['report'] = json.loads(open(p).read().splitlines()[-1]); os.remove(p)
print(json.dumps(d))"
}
export BATON_REPORT="$W/report.json"
# Rounds interleave the modes, so drift over the run (clocks, other tenants) hits each alike.
for r in $(seq $REPS); do
  for mode in native passthrough baton local keep; do
    for stream in legacy created; do
      # Pinned to the same two cores in every mode: run-to-run CPU placement otherwise
      # moves the launch cost by more than the difference being measured.
      under $mode taskset -c 4,5 "$W/launch_overhead" 100 5 $stream | grep '^{' | tag $mode $r >> "$OUT/overhead.jsonl"
    done
  done
done
for r in $(seq $TORCH_REPS); do
  for mode in native baton local keep; do
    under $mode python3 "$APPS/torch_app.py" bench-infer 2>"$OUT/bench_infer_${mode}_$r.err" | grep '^{' | tag $mode $r >> "$OUT/overhead.jsonl"
  done
done
for r in $(seq $TRAIN_REPS); do
  for mode in native baton local keep; do
    under $mode python3 "$APPS/torch_app.py" bench-train 2>"$OUT/bench_train_${mode}_$r.err" | grep '^{' | tag $mode $r >> "$OUT/overhead.jsonl"
  done
done
unset BATON_REPORT
"$BATON" daemon --stop > /dev/null 2>&1 || true

fi

say summary
python3 "$ROOT/scripts/gpu/interposer/summarize.py" "$OUT" | tee "$OUT/summary.txt"
# Only a few files come back from the GPU machine: pack the logs.
(cd "$OUT" && shopt -s nullglob && f=(./*.log ./*.err) && [ ${#f[@]} -gt 0 ] && tar czf logs.tgz "${f[@]}" && rm -f "${f[@]}")
