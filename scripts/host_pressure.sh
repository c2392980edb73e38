#!/usr/bin/env bash
# Decision latency and HP protection on the simulated device, on a quiet host and with a CPU
# hog on every core (one busy loop per CPU, at the same niceness as Baton):
#
#   scripts/host_pressure.sh OUT_DIR
#
# Runs, each without and then with the hog:
#   - the daemon's decision-latency benchmark (`cargo bench -p baton-lab --bench decision_latency`:
#     99 simulated client processes + a probe, real Unix sockets) -> OUT_DIR/decision-{quiet,hog}.json
#   - the demo on the simulated device in real time (`baton demo --device sim --realtime --json`:
#     HP requests beside a BE flood, native and under Baton) -> OUT_DIR/demo-{quiet,hog}.json
# and prints the figures side by side. Uses target/release/baton (BATON_BIN to override).
set -euo pipefail
out="${1:?usage: $0 OUT_DIR}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
baton="${BATON_BIN:-$target/release/baton}"
secs="${DEMO_SECONDS:-5}"
cargo build --release -p baton-cli --quiet
cargo bench -p baton-lab --bench decision_latency --no-run --quiet 2>/dev/null

hog_pids=()
hog_on() {
    for _ in $(seq "$(nproc)"); do
        bash -c 'while :; do :; done' &
        hog_pids+=($!)
    done
}
hog_off() {
    for p in "${hog_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${hog_pids[@]}"; do wait "$p" 2>/dev/null || true; done
    hog_pids=()
}
trap hog_off EXIT

for mode in quiet hog; do
    [ "$mode" = hog ] && hog_on
    echo "== $mode: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    BATON_BENCH_OUT="$out/decision-$mode.json" \
        cargo bench -p baton-lab --bench decision_latency --quiet > /dev/null
    "$baton" demo --device sim --realtime --json --duration-s "$secs" > "$out/demo-$mode.json"
    [ "$mode" = hog ] && hog_off
done

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(name):
    with open(os.path.join(out, name)) as f:
        return json.load(f)
for mode in ("quiet", "hog"):
    d = load(f"decision-{mode}.json")
    print(f"decision latency ({mode}):", json.dumps({k: v for k, v in d.items() if k != "schema"})[:600])
    m = load(f"demo-{mode}.json")
    print(f"demo ({mode}):", json.dumps(m.get("figures", m))[:600])
PY
