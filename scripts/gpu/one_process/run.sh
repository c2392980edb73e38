#!/usr/bin/env bash
# One process, two threads (scripts/gpu/apps/stream_priority.py): where does the latency-critical
# thread's time go, and what does Baton change? Each variant runs under a time limit (a hang
# costs one variant, not the run) and writes its result and Baton's report; the summary is
# $OUT/one_process.json (HP p50/p99 and launch time vs alone, BE images/s, the report's
# holds of a submitting thread and how many of them held Python's lock).
#
#   BATON_BIN=.gpu/baton OUT=/tmp/out HP_S=12 scripts/gpu/one_process/run.sh
#   VARIANTS="alone native baton" ...   # a subset (default: all below)
#
# Variants: alone (HP only), alone-baton (HP only, under Baton), native (HP + training),
# cpu (HP + a pure-Python busy thread, no GPU: the cost of sharing the interpreter lock),
# baton (--local, level 1), baton-mb8 / baton-mb64 (at most 8 / 64 buffered commands, so a
# held-back BE thread stops running Python sooner), baton-l2 (--local --level 2, L2_TRIES
# times, with a stall report after 10 s), alone-profile / baton-profile (BATON_PROFILE=on: time
# per intercepted call), alone-passthrough-profile (the same with BATON_ENABLE=off: the
# driver's own time per call, through the hooks). Repetitions: alone-N, alone-baton-N, native-N,
# baton-N (N a number).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# BATON_BIN and OUT are relative to where the script was run from, not to the cd below.
BATON_BIN=$(realpath "${BATON_BIN:-$ROOT/target/release/baton}")
OUT=$(realpath -m "${OUT:-$(mktemp -d /tmp/baton-one-process.XXXX)}")
cd "$ROOT/scripts/gpu/apps"   # stream_priority.py
HP_S=${HP_S:-12}
L2_TRIES=${L2_TRIES:-2}
LIMIT=$(python3 -c "print(int($HP_S * 3 + 60))")
VARIANTS=${VARIANTS:-"alone alone-baton native cpu baton baton-mb8 baton-mb64 baton-l2"}
mkdir -p "$OUT"
W=$(mktemp -d)
export PYTHONUNBUFFERED=1

one() { # name mode [env...] -- [baton args...]
    local name=$1 mode=$2
    shift 2
    local envs=() args=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    args=("$@")
    local cmd=(python3 stream_priority.py "$mode" --seconds "$HP_S" --out "$W/$name.json")
    if [ ${#args[@]} -gt 0 ]; then
        cmd=("$BATON_BIN" run "${args[@]}" -- "${cmd[@]}")
    fi
    echo "== $name: ${cmd[*]} ${envs[*]}"
    env "${envs[@]}" BATON_REPORT="$W/$name.report" "${cmd[@]}" > "$W/$name.log" 2>&1 &
    local pid=$! t=0 rc
    while kill -0 "$pid" 2> /dev/null && [ "$t" -lt "$LIMIT" ]; do sleep 1; t=$((t + 1)); done
    if kill -0 "$pid" 2> /dev/null; then
        # Hung: every thread's Python stack into the log, then stop it.
        pkill -USR1 -f "stream_priority.py $mode" ; sleep 3
        pkill -KILL -f "stream_priority.py $mode" ; kill -KILL "$pid" 2> /dev/null
        wait "$pid"; rc=124
    else
        wait "$pid"; rc=$?
    fi
    echo "   rc=$rc"
    echo "$rc" > "$W/$name.rc"
    tail -n 40 "$W/$name.log" > "$W/$name.tail"
}

for v in $VARIANTS; do
    case $v in
        alone) one alone alone ;;
        alone-baton) one alone-baton alone -- --local ;;
        native) one native both ;;
        cpu) one cpu cpu ;;
        baton) one baton both -- --local ;;
        baton-mb8) one baton-mb8 both BATON_MAX_BUFFERED=8 -- --local ;;
        alone-passthrough-profile)
            one "$v" alone BATON_ENABLE=off BATON_PROFILE=on -- --local ;;
        alone-profile) one "$v" alone BATON_PROFILE=on -- --local ;;
        baton-profile) one "$v" both BATON_PROFILE=on -- --local ;;
        baton-mb64) one baton-mb64 both BATON_MAX_BUFFERED=64 -- --local ;;
        alone-*|native-*|baton-[0-9]*)
            # A repetition: alone-2, native-2, baton-2 ...
            case $v in
                alone-baton-*) one "$v" alone -- --local ;;
                alone-*) one "$v" alone ;;
                native-*) one "$v" both ;;
                *) one "$v" both -- --local ;;
            esac ;;
        baton-l2)
            for i in $(seq 1 "$L2_TRIES"); do
                one "baton-l2-$i" both BATON_STALL_REPORT_S=10 -- --local --level 2
            done ;;
        *) echo "unknown variant $v" >&2 ;;
    esac
done

python3 - "$W" "$OUT/one_process.json" "$HP_S" <<'PY'
import glob, json, os, sys
w, out, hp_s = sys.argv[1:]
runs = {}
for rc in sorted(glob.glob(f"{w}/*.rc")):
    name = os.path.basename(rc)[:-3]
    r = {"rc": int(open(rc).read())}
    try:
        r["result"] = json.load(open(f"{w}/{name}.json"))
    except (OSError, ValueError):
        r["log_tail"] = open(f"{w}/{name}.tail").read()[-3000:]
    try:
        rep = json.loads(open(f"{w}/{name}.report").read().splitlines()[-1])
        r["report"] = {k: rep.get(k) for k in ("kernels", "commands", "deferred", "level",
                       "liveness_releases", "submitter_held", "submitter_held_ms",
                       "held_with_python_lock", "sync_points", "streams")}
        r["report"]["hooks"] = rep.get("hooks", [])[:15]
        r["report"]["queues"] = rep.get("queues", [])[:3]
    except (OSError, ValueError, IndexError):
        pass
    runs[name] = r
alone = runs.get("alone", {}).get("result", {}).get("hp")
summary = {}
for name, r in runs.items():
    hp = (r.get("result") or {}).get("hp")
    be = (r.get("result") or {}).get("be") or {}
    row = {"rc": r["rc"]}
    if hp:
        row.update(p50_ms=hp["p50_ms"], p99_ms=hp["p99_ms"], launch_p50_ms=hp.get("launch_p50_ms"))
        if alone:
            row.update(p50_x=hp["p50_ms"] / alone["p50_ms"], p99_x=hp["p99_ms"] / alone["p99_ms"])
    if be:
        row["be"] = be
    if "report" in r:
        row["held"] = [r["report"].get(k) for k in ("submitter_held", "submitter_held_ms",
                                                    "held_with_python_lock")]
        row["liveness_releases"] = r["report"].get("liveness_releases")
        # Profiled launches: Baton's own µs per launch that reached the driver from the
        # application's thread (hook time minus the real call's), per launch function; exact
        # when no launch was deferred (then every call's driver time is measured).
        for h in r["report"].get("hooks", []):
            if h.get("driver_calls"):
                n = h["driver_calls"]
                row.setdefault("own_us_per_launch", {})[h["call"]] = round(
                    (h["us"] * n / h["calls"] - h["driver_us"]) / n, 3)
    summary[name] = row
json.dump({"hp_s": float(hp_s), "summary": summary, "runs": runs},
          open(out, "w"), indent=2)
print(json.dumps(summary, indent=1))
PY
