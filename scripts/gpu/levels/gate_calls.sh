#!/usr/bin/env bash
# Which driver calls wait for other streams' pending work (scripts/gpu/levels/gate_probe.cu)?
# Each call runs in its own process with a stream held behind a closed gate; a call that has
# not returned after LIMIT seconds waits for the device. Writes $OUT/gate_calls.jsonl.
#
#   OUT=/tmp/out scripts/gpu/levels/gate_calls.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=${OUT:-$ROOT/out}
LIMIT=${LIMIT:-3}
mkdir -p "$OUT"
W=$(mktemp -d)
nvcc -O2 -arch=sm_90 -o "$W/probe" "$ROOT/scripts/gpu/levels/gate_probe.cu" -lcuda || exit 1
rm -f "$OUT/gate_calls.jsonl"
for c in $("$W/probe" list); do
  rm -f "$W/r.json"
  timeout -s KILL "$LIMIT" "$W/probe" "$c" "$W/r.json" 2>"$W/err"
  if [ -s "$W/r.json" ]; then
    cat "$W/r.json" >> "$OUT/gate_calls.jsonl"
  else
    printf '{"call":"%s","returned":false,"blocked_s":%s,"stderr":%s}\n' "$c" "$LIMIT" \
      "$(python3 -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read().strip()))' "$W/err")" >> "$OUT/gate_calls.jsonl"
  fi
done
cat "$OUT/gate_calls.jsonl"
