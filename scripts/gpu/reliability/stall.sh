#!/usr/bin/env bash
# A high-priority process whose kernel hangs, beside a best-effort GEMM loop, both under
# `baton run` on the GPU: with the daemon's stall limit (--stall-ms 3000) BE must be held while
# the kernel is young and run again once it has completed nothing for the limit; with the
# limit off (--stall-ms 0), BE is held for as long as the kernel runs. The "hung" kernel spins
# for HANG_S seconds (default 12) on one SM and then ends, so nothing needs killing.
#
#   scripts/gpu/reliability/stall.sh OUT_DIR
#
# Needs PyTorch and CuPy, and `baton` + `libbaton_interposer.so` (BATON_BIN, else .gpu/baton,
# else target/release/baton). Writes OUT_DIR/{on,off}/{be,hp}.json, the daemons' logs and
# OUT_DIR/summary.json (BE's GEMM steps per second before the hang, in the kernel's first
# seconds, in the rest of its life and after it).
set -euo pipefail
out="${1:?usage: $0 OUT_DIR}"
root="$(cd "$(dirname "$0")/../../.." && pwd)"
here="$root/scripts/gpu/reliability"
if [ -z "${BATON_BIN:-}" ]; then
    BATON_BIN="$root/target/release/baton"
    [ -x "$root/.gpu/baton" ] && BATON_BIN="$root/.gpu/baton"
fi
HANG_S="${HANG_S:-12}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
for mode in on off; do
    d="$out/$mode"
    mkdir -p "$d"
    limit=3000
    [ "$mode" = off ] && limit=0
    sock="$(mktemp -d)/baton.sock"
    "$BATON_BIN" daemon --socket "$sock" --stall-ms "$limit" >"$d/daemon.log" 2>&1 &
    daemon=$!
    for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
    BATON_SOCKET="$sock" "$BATON_BIN" run --priority 0 -- \
        python3 "$here/stall_apps.py" be --seconds $((HANG_S + 14)) --out "$d/be.json" &
    be=$!
    sleep 4
    BATON_SOCKET="$sock" "$BATON_BIN" run --priority 10 -- \
        python3 "$here/stall_apps.py" hang --seconds "$HANG_S" --out "$d/hp.json" &
    hp=$!
    # Inside the kernel's first seconds (CuPy starts in ~3 s): what the daemon holds.
    sleep 5
    "$BATON_BIN" list --json --socket "$sock" >"$d/list.json" 2>&1 || true
    wait "$hp"
    wait "$be"
    "$BATON_BIN" daemon --stop --socket "$sock" >/dev/null 2>&1 || true
    wait "$daemon" || true
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
summary = {"schema": "baton.gpu-reliability-stall/1", "modes": {}}
def rate(log, a, b):
    pts = [(t, s) for t, s in log if a <= t <= b]
    return (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0]) if len(pts) > 1 and pts[-1][0] > pts[0][0] else 0.0
for mode in ("on", "off"):
    be = json.load(open(f"{out}/{mode}/be.json"))["log"]
    hp = json.load(open(f"{out}/{mode}/hp.json"))
    t0, t1 = hp["t_launch"], hp["t_done"]
    # Longest stretch without a BE step completing, inside the kernel's life.
    ts = [t0] + [t for t, _ in be if t0 < t < t1] + [t1]
    gap = max(b - a for a, b in zip(ts, ts[1:]))
    m = {"kernel_s": round(t1 - t0, 2),
         "be_steps_per_s_before": round(rate(be, t0 - 3, t0), 1),
         "be_steps_per_s_first_2s": round(rate(be, t0 + 0.2, t0 + 2), 1),
         "be_steps_per_s_rest_of_kernel": round(rate(be, t0 + 5, t1), 1),
         "be_steps_per_s_after": round(rate(be, t1 + 0.5, t1 + 5), 1),
         "be_longest_gap_in_kernel_s": round(gap, 2)}
    summary["modes"][mode] = m
    print(mode, m)
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
PY
