#!/usr/bin/env bash
# One process, HP inference on a high-priority stream beside BE training on a normal stream
# (scripts/gpu/apps/stream_priority.py): HP alone, both natively, both under `baton run --local`
# (stream priorities become queue priorities), at level 1 and at level 2. Writes
# $OUT/stream_priority.json. ~3 minutes with the default HP_S=30.
#
#   BATON_BIN=target/release/baton OUT=/tmp/out scripts/gpu/two_process/stream_priority.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# BATON_BIN and OUT are relative to where the script was run from, not to the cd below.
BATON_BIN=$(realpath "${BATON_BIN:-$ROOT/target/release/baton}")
OUT=$(realpath -m "${OUT:-$(mktemp -d /tmp/baton-stream-priority.XXXX)}")
cd "$ROOT/scripts/gpu/apps"   # stream_priority.py
HP_S=${HP_S:-30}
mkdir -p "$OUT"
W=$(mktemp -d)
export PYTHONUNBUFFERED=1
python3 stream_priority.py alone --seconds "$HP_S" --out "$W/alone.json"
python3 stream_priority.py both --seconds "$HP_S" --out "$W/native.json"
BATON_REPORT="$W/report.json" "$BATON_BIN" run --local -- python3 stream_priority.py both --seconds "$HP_S" --out "$W/baton.json"
# Level 2: the BE stream's gate stops it within one command, which level 1 cannot in one process.
BATON_REPORT="$W/report_l2.json" "$BATON_BIN" run --local --level 2 -- python3 stream_priority.py both --seconds "$HP_S" --out "$W/baton_l2.json"
python3 - "$W" "$OUT/stream_priority.json" <<'PY'
import json, sys
w, out = sys.argv[1:]
r = {k: json.load(open(f"{w}/{k}.json")) for k in ("alone", "native", "baton", "baton_l2")}
a = r["alone"]["hp"]
r["hp_x_alone"] = {k: {q: r[k]["hp"][q] / a[q] for q in ("p50_ms", "p99_ms")} for k in ("native", "baton", "baton_l2")}
r["be_baton_x_native"] = r["baton"]["be"]["images_per_s"] / r["native"]["be"]["images_per_s"]
r["be_baton_l2_x_native"] = r["baton_l2"]["be"]["images_per_s"] / r["native"]["be"]["images_per_s"]
try:
    r["baton_report"] = json.loads(open(f"{w}/report.json").read().splitlines()[-1])
except OSError:
    pass
json.dump(r, open(out, "w"), indent=2)
print(json.dumps({k: r[k] for k in ("hp_x_alone", "be_baton_x_native", "be_baton_l2_x_native")}, indent=2))
PY
