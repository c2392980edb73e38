#!/usr/bin/env bash
# The CPU instructions Baton adds to one kernel launch, counted exactly (valgrind's callgrind)
# on the fake driver: the `launch-rate` scenario (32,000 launches on one stream beside 31 idle
# ones) natively and under the interposer with an unsuspended queue. Instruction counts do not
# depend on the machine's load, so this compares commits where timings on a shared machine
# cannot; what a launch costs in time on a GPU is measured by scripts/gpu/interposer_check.sh.
#
#   scripts/launch_cost.sh            prints one JSON line
#
# Needs valgrind (apt install valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "launch_cost.sh: valgrind is not installed" >&2; exit 2; }
cargo build -q --release -p baton-fake-cuda -p baton-interposer -p baton-cuda-testapps
T=target/release
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
ln -s "$PWD/$T/libfake_cuda.so" "$W/libcuda.so.1"
ln -s "$PWD/$T/libfake_cuda.so" "$W/libcuda.so"

# Inclusive instructions of `cuLaunchKernel` as exported by the library named $2 (all calls),
# from a callgrind profile: the interposer's hook includes the driver's function it calls.
inclusive() {
  callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
    awk -v lib="$2" 'index($0, ":cuLaunchKernel [") && index($0, lib "]") {
      gsub(",", "", $1); if ($1 + 0 > max) max = $1 + 0 } END { print max + 0 }'
}

run() {
  local name=$1; shift
  env LD_LIBRARY_PATH="$W" "$@" valgrind --tool=callgrind --callgrind-out-file="$W/$name.cg" \
    "$T/runtime-like" launch-rate >"$W/$name.out" 2>"$W/$name.err" ||
    { echo "launch_cost.sh: the $name run failed:" >&2; cat "$W/$name.err" >&2; exit 1; }
  grep -q '^launch-rate ok' "$W/$name.out"
}

n=32000  # the scenario's launches, warm-up rounds included
run native
run baton LD_PRELOAD="$PWD/$T/libbaton_interposer.so" BATON_SCHEDULER=local
native=$(inclusive "$W/native.cg" libfake_cuda.so)
driver=$(inclusive "$W/baton.cg" libfake_cuda.so)
hook=$(inclusive "$W/baton.cg" libbaton_interposer.so)
python3 - "$native" "$driver" "$hook" "$n" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" <<'PY'
import json, sys
native, driver, hook, n = (int(x) for x in sys.argv[1:5])
if min(native, driver, hook) <= 0:
    sys.exit("launch_cost.sh: cuLaunchKernel not found in a profile")
print(json.dumps({"commit": sys.argv[5], "launches": n,
                  "driver_instructions_per_launch": round(native / n),
                  "under_baton_per_launch": round(hook / n),
                  "added_per_launch": round((hook - driver) / n)}))
PY
