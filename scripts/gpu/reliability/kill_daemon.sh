#!/usr/bin/env bash
# kill -9 of the daemon in the middle of an HP/BE pair on the GPU: ResNet-50 inference (HP,
# priority 10) beside ResNet-50 training (BE, priority 0), both under `baton run`, the daemon
# killed with kill -9 while both run, a new daemon started after a pause; both programs must
# finish, and their results (deterministic: fixed seeds and algorithms) must equal a native
# co-located run's, digest for digest.
#
#   scripts/gpu/reliability/kill_daemon.sh OUT_DIR [TRIALS]
#
# Needs PyTorch with CUDA, and `baton` + `libbaton_interposer.so` (BATON_BIN, else .gpu/baton,
# else target/release/baton). Writes OUT_DIR/native.json, OUT_DIR/trial-N/*.json (each
# program's result, the daemon's list before the kill and after the new daemon adopted the
# survivors) and OUT_DIR/summary.json (schema baton.gpu-reliability-kill-daemon/1); exits 1
# if any trial differs from native or a program failed.
set -euo pipefail
out="${1:?usage: $0 OUT_DIR [TRIALS]}"
trials="${2:-3}"
root="$(cd "$(dirname "$0")/../../.." && pwd)"
here="$root/scripts/gpu/reliability"
if [ -z "${BATON_BIN:-}" ]; then
    BATON_BIN="$root/target/release/baton"
    [ -x "$root/.gpu/baton" ] && BATON_BIN="$root/.gpu/baton"
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
REQUESTS="${REQUESTS:-3000}"
# Training outlasts the service, so both run when the daemon is killed.
STEPS="${STEPS:-1500}"

wait_progress() { # FILE MIN: until the program reports MIN units done
    until [ -f "$1" ] && [ "$(cat "$1" 2>/dev/null || echo 0)" -ge "$2" ]; do sleep 0.05; done
}

pair() { # DIR LAUNCHER...: runs the pair, HP started once BE is under way
    local dir="$1"; shift
    mkdir -p "$dir"
    "$@" 0 python3 "$here/workload.py" train --steps "$STEPS" --out "$dir/train.json" \
        --progress "$dir/train.progress" > "$dir/train.log" 2>&1 &
    BE_PID=$!
    wait_progress "$dir/train.progress" 5
    "$@" 10 python3 "$here/workload.py" infer --requests "$REQUESTS" --out "$dir/infer.json" \
        --progress "$dir/infer.progress" > "$dir/infer.log" 2>&1 &
    HP_PID=$!
}

native() { shift; "$@"; }               # the priority argument is dropped
under_baton() { local p="$1"; shift; "$BATON_BIN" run --priority "$p" -- "$@"; }

echo "native pair..." >&2
pair "$out/native" native
wait "$HP_PID"; wait "$BE_PID"

status=0
for t in $(seq 1 "$trials"); do
    dir="$out/trial-$t"
    mkdir -p "$dir"
    export BATON_SOCKET="$dir/baton.sock"
    "$BATON_BIN" daemon > "$dir/daemon1.log" 2>&1 &
    daemon=$!
    until "$BATON_BIN" list --json > /dev/null 2>&1; do sleep 0.05; done
    echo "trial $t: pair under Baton..." >&2
    pair "$dir" under_baton
    # Kill at a different point each trial: a quarter, a half, three quarters of the HP run.
    at=$(( REQUESTS * (1 + (t - 1) % 3) / 4 ))
    wait_progress "$dir/infer.progress" "$at"
    "$BATON_BIN" list --json > "$dir/list-before.json" || true
    kill -9 "$daemon"
    killed_at_train="$(cat "$dir/train.progress")"
    sleep 2  # both run unscheduled (fail-open) meanwhile
    "$BATON_BIN" daemon > "$dir/daemon2.log" 2>&1 &
    daemon=$!
    restart_at="$(python3 -c "import time; print(time.monotonic())")"
    both_running_at_kill=false
    [ -e "/proc/$HP_PID" ] && [ -e "/proc/$BE_PID" ] && both_running_at_kill=true
    adopted=false
    for _ in $(seq 1 100); do
        "$BATON_BIN" list --json > "$dir/list-after.json" 2>/dev/null || true
        if python3 - "$dir/list-after.json" "$HP_PID" "$BE_PID" <<'PY'
import json, os, sys
try:
    procs = json.load(open(sys.argv[1]))["processes"]
except Exception:
    sys.exit(1)
# Every program still running (both, when the kill came mid-run) is back, with its queues.
# (The pids given are the launching subshells', alive exactly as long as their programs.)
alive = sum(1 for p in sys.argv[2:] if os.path.exists(f"/proc/{p}"))
listed = sum(1 for p in procs if "workload.py" in p["command"] and p["queues"])
sys.exit(0 if alive and listed >= alive else 1)
PY
        then adopted=true; break; fi
        sleep 0.1
    done
    readopted_after_s="$(python3 -c "import time; print(round(time.monotonic() - $restart_at, 3))")"
    hp_rc=0; be_rc=0
    wait "$HP_PID" || hp_rc=$?
    wait "$BE_PID" || be_rc=$?
    kill "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
    python3 - "$out/native" "$dir" "$hp_rc" "$be_rc" "$adopted" "$at" "$killed_at_train" \
        "$both_running_at_kill" "$readopted_after_s" <<'PY' || status=1
import json, os, sys
native, d, hp_rc, be_rc, adopted, at, train_at, both, after_s = sys.argv[1:]
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
n_i, n_t = load(os.path.join(native, "infer.json")), load(os.path.join(native, "train.json"))
b_i, b_t = load(os.path.join(d, "infer.json")), load(os.path.join(d, "train.json"))
r = {
    "schema": "baton.gpu-reliability-trial/1",
    "killed_at_hp_request": int(at), "killed_at_be_step": int(train_at),
    "hp_exit": int(hp_rc), "be_exit": int(be_rc), "readopted": adopted == "true",
    "both_running_after_kill": both == "true",
    "readopted_within_s": float(after_s) if adopted == "true" else None,
    "hp_identical": bool(n_i and b_i and n_i["digest"] == b_i["digest"]),
    "be_identical": bool(n_t and b_t and n_t["digest"] == b_t["digest"] and n_t["losses"] == b_t["losses"]),
    "hp_latency_ms": b_i and b_i["latency_ms"], "native_hp_latency_ms": n_i and n_i["latency_ms"],
}
json.dump(r, open(os.path.join(d, "trial.json"), "w"), indent=1)
print(json.dumps(r))
ok = (r["hp_exit"] == 0 and r["be_exit"] == 0 and r["hp_identical"] and r["be_identical"]
      and r["readopted"] and r["both_running_after_kill"])
sys.exit(0 if ok else 1)
PY
done
python3 - "$out" "$trials" <<'PY'
import glob, json, os, sys
out, trials = sys.argv[1], int(sys.argv[2])
rows = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(out, "trial-*", "trial.json")))]
s = {
    "schema": "baton.gpu-reliability-kill-daemon/1",
    "trials": trials,
    "passed": sum(1 for r in rows if r["hp_exit"] == 0 and r["be_exit"] == 0 and r["hp_identical"]
                  and r["be_identical"] and r["readopted"] and r["both_running_after_kill"]),
    "rows": rows,
}
json.dump(s, open(os.path.join(out, "summary.json"), "w"), indent=1)
print(f"{s['passed']}/{trials} trials: both finished, identical to native, re-adopted")
PY
exit "$status"
