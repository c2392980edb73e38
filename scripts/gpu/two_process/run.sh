#!/usr/bin/env bash
# Two PyTorch processes on one GPU: HP = ResNet-50 fp16 batch-8 inference (a request every
# 20 ms, per-request latency), BE = ResNet-50 training. Three phases in one run:
#   1. HP alone;  2. HP + BE native;  3. HP + BE each under `baton run --priority 10 / 0`
#   (the daemon is started by the first `baton run`), with `baton trace` recording.
# Writes $OUT/{hp_alone,hp_native,be_native,hp_baton,be_baton}.json, $OUT/summary.json,
# $OUT/trace.json and $OUT/trace.png. About 4–5 minutes, plus ~1.5 per extra level in
# LEVELS (e.g. LEVELS="1 3" also runs the BE process at level 3).
#
#   BATON_BIN=target/release/baton OUT=/tmp/out scripts/gpu/two_process/run.sh
#
# Needs: a CUDA GPU, python3 with torch and matplotlib, `baton` and libbaton_interposer.so
# side by side (cargo build --release -p baton-cli -p baton-interposer).
set -euo pipefail
cd "$(dirname "$0")/../../.."
BATON_BIN=${BATON_BIN:-target/release/baton}
OUT=${OUT:-$(mktemp -d /tmp/baton-two-process.XXXX)}
HP_S=${HP_S:-45}
mkdir -p "$OUT"
W=scripts/gpu/apps/resnet_workload.py
[ -x "$BATON_BIN" ] || { echo "no $BATON_BIN: build it with cargo build --release -p baton-cli -p baton-interposer" >&2; exit 1; }
[ -f "$(dirname "$BATON_BIN")/libbaton_interposer.so" ] || { echo "no libbaton_interposer.so next to $BATON_BIN" >&2; exit 1; }
export BATON_SOCKET="$OUT/baton.sock"   # a daemon of this run's own
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
"$BATON_BIN" doctor --json > "$OUT/doctor_before.json" || true

echo "== phase 1: HP alone (${HP_S}s)"
python3 $W infer --seconds "$HP_S" --out "$OUT/hp_alone.json"

echo "== phase 2: HP + BE, native"
python3 $W train --seconds $((HP_S + 40)) --out "$OUT/be_native.json" & BE=$!
sleep 25   # BE warm-up (cuDNN autotuning) before HP measures
python3 $W infer --seconds "$HP_S" --out "$OUT/hp_native.json"
wait $BE

# LEVELS: the levels the BE process runs at under Baton, one phase each ("1 3": level 1, then
# level 3). Files of level 1 keep the plain names; other levels add _l<level>.
for L in ${LEVELS:-1}; do
sfx=""; [ "$L" = 1 ] || sfx="_l$L"
echo "== phase 3$sfx: HP + BE under baton run --priority 10 / 0 --level $L"
"$BATON_BIN" run --priority 0 --level "$L" -- python3 $W train --seconds $((HP_S + 40)) --out "$OUT/be_baton$sfx.json" & BE=$!
sleep 25
TR=""
if [ -z "$sfx" ] || [ ! -f "$OUT/trace.json" ]; then
  "$BATON_BIN" trace --seconds 10 --out "$OUT/trace.json" & TR=$!
fi
BATON_REPORT="$OUT/report_hp$sfx.json" "$BATON_BIN" run --priority 10 -- python3 $W infer --seconds "$HP_S" --out "$OUT/hp_baton$sfx.json" & HP=$!
sleep 5
"$BATON_BIN" list --json > "$OUT/list_during_baton$sfx.json" || true
"$BATON_BIN" doctor --json > "$OUT/doctor_during_baton$sfx.json" || true
wait $HP; [ -n "$TR" ] && wait $TR; wait $BE
done
"$BATON_BIN" daemon --stop || true

python3 scripts/gpu/two_process/plot_trace.py "$OUT/trace.json" "$OUT/trace.png" --window-ms 300
python3 - "$OUT" <<'PY'
import json, sys, os
o = sys.argv[1]
j = lambda n: json.load(open(os.path.join(o, n + ".json")))
a, n, bn = j("hp_alone"), j("hp_native"), j("be_native")
s = {"hp_alone": a, "hp_native": n, "be_native": bn,
     "hp_p50_x_alone": {"native": n["p50_ms"] / a["p50_ms"]},
     "hp_p99_x_alone": {"native": n["p99_ms"] / a["p99_ms"]}, "be_baton_x_native": {}}
for f in sorted(os.listdir(o)):
    if f.startswith("hp_baton") and f.endswith(".json"):
        k = "baton" + f[len("hp_baton"):-5]          # baton, baton_l3
        b, bb = j("hp_" + k), j("be_" + k)
        s["hp_" + k], s["be_" + k] = b, bb
        s["hp_p50_x_alone"][k] = b["p50_ms"] / a["p50_ms"]
        s["hp_p99_x_alone"][k] = b["p99_ms"] / a["p99_ms"]
        s["be_baton_x_native"][k] = bb["images_per_s"] / bn["images_per_s"] if bn["images_per_s"] else None
json.dump(s, open(os.path.join(o, "summary.json"), "w"), indent=2)
print(json.dumps({k: s[k] for k in ["hp_p50_x_alone", "hp_p99_x_alone", "be_baton_x_native"]}, indent=2))
PY
echo "results in $OUT"
