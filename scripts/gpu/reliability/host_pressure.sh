#!/usr/bin/env bash
# HP protection on the GPU with every CPU busy: the GPU demo (`baton demo --device gpu --json`:
# HP requests beside a BE flood — alone, natively, under Baton — in real processes), on a
# quiet host and with a CPU hog on every core (one busy loop per CPU, at Baton's niceness),
# alternated REPEATS times:
#
#   scripts/gpu/reliability/host_pressure.sh OUT_DIR [REPEATS]
#
# Writes OUT_DIR/demo-{quiet,hog}-N.json and OUT_DIR/summary.json. Needs `baton` and
# `libbaton_interposer.so` (BATON_BIN, else .gpu/baton).
set -euo pipefail
out="${1:?usage: $0 OUT_DIR [REPEATS]}"
reps="${2:-2}"
root="$(cd "$(dirname "$0")/../../.." && pwd)"
baton="${BATON_BIN:-$root/.gpu/baton}"
mkdir -p "$out"
hog_pids=()
hog_off() {
    for p in "${hog_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${hog_pids[@]}"; do wait "$p" 2>/dev/null || true; done
    hog_pids=()
}
trap hog_off EXIT
for rep in $(seq "$reps"); do
    for mode in quiet hog; do
        if [ "$mode" = hog ]; then
            for _ in $(seq "$(nproc)"); do
                bash -c 'while :; do :; done' &
                hog_pids+=($!)
            done
        fi
        echo "== $mode $rep ($(nproc) CPUs)" >&2
        "$baton" demo --device gpu --json > "$out/demo-$mode-$rep.json"
        hog_off
    done
done
python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
rows = []
for p in sorted(glob.glob(os.path.join(out, "demo-*.json"))):
    d = json.load(open(p))
    d = {**d, **d.get("figures", {})}
    mode = os.path.basename(p).split("-")[1]
    rows.append({"file": os.path.basename(p), "mode": mode,
                 **{k: d.get(k) for k in ("hp_alone_p99_us", "hp_native_p99_us", "hp_baton_p99_us",
                                          "be_alone_tput", "be_native_tput", "be_baton_tput",
                                          "be_baton_idle_share", "meets_targets")}})
json.dump({"schema": "baton.gpu-host-pressure/1", "rows": rows}, open(os.path.join(out, "summary.json"), "w"), indent=1)
for r in rows:
    print(r)
PY
