#!/usr/bin/env bash
# Transparency and overhead of the CUDA interposer on a GPU machine.
#
#   scripts/gpu/interposer_check.sh [--quick] [transparency|overhead]
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
# training step times, native and under Baton alternately in the same run.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
QUICK=0; [ "${1:-}" = "--quick" ] && { QUICK=1; shift; }
PART=${1:-all}
BATON=${BATON_BIN:-$ROOT/target/release/baton}
LIB=${BATON_LIB:-$ROOT/target/release/libbaton_interposer.so}
APPS=$ROOT/scripts/gpu/apps
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

say build
nvcc -O2 -arch=sm_90 -o "$W/cuda_app" "$APPS/cuda_app.cu" 2>&1 | tail -3
nvcc -O2 -arch=sm_90 -o "$W/launch_overhead" "$APPS/launch_overhead.cu" 2>&1 | tail -3
CUPTI_INC=$(ls -d "$CUDA_HOME"/extras/CUPTI/include "$CUDA_HOME"/targets/x86_64-linux/include 2>/dev/null | head -1)
CUPTI_LIB=$(dirname "$(find "$CUDA_HOME" / -name 'libcupti.so*' 2>/dev/null | head -1)")
gcc -O2 -shared -fPIC -I"$CUPTI_INC" -o "$W/launch_counter.so" "$APPS/launch_counter.c" -L"$CUPTI_LIB" -lcupti -Wl,-rpath,"$CUPTI_LIB" 2>&1 | tail -3
[ -f "$W/launch_counter.so" ] && echo "CUPTI counter built ($CUPTI_LIB)" || echo "CUPTI counter unavailable"

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
    baton-small) BATON_REPORT="$W/report_${name}_$mode.json" "$BATON" run --threshold 2 --batch 1 -- "$@" > "$log" 2>&1 ;;
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

if [ "$PART" = all ] || [ "$PART" = transparency ]; then
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
ORDER="cuda_app torch_infer torch_train cupy jax triton"
[ $QUICK = 1 ] && ORDER="cuda_app torch_infer"
for app in $ORDER; do
  for mode in native counted baton baton-small; do
    # shellcheck disable=SC2086
    run "$app" "$mode" ${CMD[$app]}
  done
done

fi

if [ "$PART" = all ] || [ "$PART" = overhead ]; then
say overhead
rm -f "$OUT/overhead.jsonl"
REPS=3; [ $QUICK = 1 ] && REPS=1
for r in $(seq $REPS); do
  for mode in native baton; do
    for stream in legacy created; do
      if [ $mode = native ]; then "$W/launch_overhead" 20000 15 $stream; else "$BATON" run -- "$W/launch_overhead" 20000 15 $stream; fi \
        | grep '^{' | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); d.update(mode='$mode', rep=$r); print(json.dumps(d))" >> "$OUT/overhead.jsonl"
    done
    for b in bench-infer bench-train; do
      if [ $mode = native ]; then python3 "$APPS/torch_app.py" $b; else "$BATON" run -- python3 "$APPS/torch_app.py" $b; fi 2>"$OUT/bench_${b}_${mode}_$r.err" \
        | grep '^{' | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); d.update(mode='$mode', rep=$r); print(json.dumps(d))" >> "$OUT/overhead.jsonl"
    done
  done
done

fi

say summary
python3 "$ROOT/scripts/gpu/summarize_interposer.py" "$OUT" | tee "$OUT/summary.txt"
# Only a few files come back from the GPU machine: pack the logs.
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err 2>/dev/null && rm -f ./*.log ./*.err)
