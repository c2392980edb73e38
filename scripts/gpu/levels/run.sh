#!/usr/bin/env bash
# Preemption by level on a GPU machine (scripts/gpu/levels/preempt_probe.cu): a best-effort
# process saturating the GPU with spin kernels of 0.1, 1 and 10 ms, and a latency-critical
# process timing a 50 µs kernel every 10 ms against it — natively (time-slicing), and under
# Baton with the best-effort process at level 1, 2 and 3 (its context's time slice
# drops while it is suspended). Also each level's cost to the best-effort process alone, and,
# from the GPU's own clock, when BE stopped occupying the GPU and when HP's kernel started.
# Writes $OUT/levels.jsonl (one line per run), $OUT/levels_summary.json and the raw GPU-clock
# traces, $OUT/levels_traces.tar.gz. ~4.5 minutes at SECS=4.
#
#   BATON_BIN=target/release/baton OUT=/tmp/out scripts/gpu/levels/run.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BATON=${BATON_BIN:-$ROOT/target/release/baton}
OUT=${OUT:-$ROOT/out}
SECS=${SECS:-6}
KERNELS=${KERNELS:-100 1000 10000}
HP_US=${HP_US:-50}
MODES=${MODES:-native l1 l2 l3}   # also: l3y1 (level 3 with a 1 µs yield slice)
mkdir -p "$OUT"
W=$(mktemp -d)
export BATON_SOCKET="$W/baton.sock"
nvcc -O2 -arch=sm_90 -o "$W/probe" "$ROOT/scripts/gpu/levels/preempt_probe.cu" || exit 1
rm -f "$OUT/levels.jsonl"

# note NAME FILE [REPORT [TIMELINE]]: appends FILE's JSON with the run's name, the
# interposer's report and the preemption timeline's summary.
note() {
  python3 - "$1" "$2" "${3:-}" "${4:-}" >> "$OUT/levels.jsonl" <<'PY'
import json, os, sys
name, path, report, timeline = sys.argv[1:]
d = json.load(open(path)); d["run"] = name
if report and os.path.exists(report):
    d["baton_report"] = json.loads(open(report).read().splitlines()[-1])
if timeline and os.path.exists(timeline):
    d["timeline"] = json.load(open(timeline))
print(json.dumps(d))
PY
}

# under MODE ROLE CMD...: runs CMD natively (native) or under baton run at level 1 or 3.
under() {
  local mode=$1 role=$2; shift 2
  local prio=0; [ "$role" = hp ] && prio=10
  case $mode in
    native) "$@" ;;
    l1) "$BATON" run --priority $prio -- "$@" ;;
    l2) "$BATON" run --priority $prio --level 2 -- "$@" ;;
    l3) "$BATON" run --priority $prio --level 3 -- "$@" ;;
    l3y1) BATON_YIELD_SLICE_US=1 "$BATON" run --priority $prio --level 3 -- "$@" ;;
  esac
}

"$W/probe" hp "$HP_US" 10 "$SECS" "$W/hp_alone.json" "$W/tl_hp_alone.csv" && note hp_alone "$W/hp_alone.json"
for D in $KERNELS; do
  for mode in $MODES; do
    BATON_REPORT="$W/rep_be_alone_${mode}_$D.json" under $mode be "$W/probe" be "$D" "$SECS" "$W/be_alone_${mode}_$D.json" &&
      note "be_alone_${mode}_$D" "$W/be_alone_${mode}_$D.json" "$W/rep_be_alone_${mode}_$D.json"
  done
  for mode in $MODES; do
    BATON_REPORT="$W/rep_be_${mode}_$D.json" under $mode be "$W/probe" be "$D" $((SECS + 3)) "$W/be_${mode}_$D.json" "$W/tl_be_${mode}_$D.bin" & BE=$!
    sleep 1.5
    BATON_REPORT="$W/rep_hp_${mode}_$D.json" under $mode hp "$W/probe" hp "$HP_US" 10 "$SECS" "$W/hp_${mode}_$D.json" "$W/tl_hp_${mode}_$D.csv"
    HP=$?
    wait $BE && note "be_${mode}_$D" "$W/be_${mode}_$D.json" "$W/rep_be_${mode}_$D.json"
    # When BE stopped occupying the GPU and HP's kernel started, on the GPU's clock.
    python3 "$ROOT/scripts/gpu/levels/preemption_timeline.py" "$W/tl_be_${mode}_$D.bin" "$W/tl_hp_${mode}_$D.csv" \
      "$W/tl_hp_alone.csv" > "$W/tl_${mode}_$D.json" || rm -f "$W/tl_${mode}_$D.json"
    [ $HP = 0 ] && note "hp_${mode}_$D" "$W/hp_${mode}_$D.json" "$W/rep_hp_${mode}_$D.json" "$W/tl_${mode}_$D.json"
  done
done
"$BATON" daemon --stop 2>/dev/null || true
# The raw traces, for a second look (preemption_timeline.py reads them).
tar -C "$W" -czf "$OUT/levels_traces.tar.gz" $(cd "$W" && find . -name "tl_*" -size -4M)  # the 0.1 ms BE traces (~9 MB each) stay behind

python3 - "$OUT/levels.jsonl" "$OUT/levels_summary.json" <<'PY'
import json, sys
runs = {d["run"]: d for d in map(json.loads, open(sys.argv[1]))}
alone = runs.get("hp_alone", {})
s = {"hp_alone": {k: alone.get(k) for k in ("p50_us", "p99_us")}, "by_kernel_us": {}}
for name, d in runs.items():
    if not name.startswith("hp_") or name == "hp_alone":
        continue
    _, mode, k = name.split("_")
    row = s["by_kernel_us"].setdefault(k, {})
    be = runs.get(f"be_{mode}_{k}", {})
    be_alone = runs.get(f"be_alone_native_{k}", {})
    row[mode] = {
        "hp_p50_us": d["p50_us"], "hp_p99_us": d["p99_us"],
        "added_p50_us": d["p50_us"] - alone.get("p50_us", 0),
        "added_p99_us": d["p99_us"] - alone.get("p99_us", 0),
        "be_busy_fraction": be.get("busy_fraction"),
        "be_alone_x_native": (runs.get(f"be_alone_{mode}_{k}", {}).get("kernels_per_s", 0)
                              / be_alone["kernels_per_s"]) if be_alone.get("kernels_per_s") else None,
        "level3": (be.get("baton_report") or {}).get("level3_contexts"),
        # From HP's launch, on the GPU's clock: until BE stopped occupying the GPU, and
        # until HP's kernel started (preemption_timeline.py).
        "timeline": d.get("timeline"),
    }
json.dump(s, open(sys.argv[2], "w"), indent=2)
print(json.dumps(s, indent=1))
PY
