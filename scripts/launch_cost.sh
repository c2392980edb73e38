#!/usr/bin/env bash
# What Baton adds to one kernel launch, counted exactly with valgrind's callgrind on the fake
# driver, in the `launch-rate` scenario (launches on one stream beside 31 idle pool streams),
# under the interposer with an unsuspended queue (`--local`):
#
# - instructions: 32,000 launches back to back (warm caches);
# - cache lines: 7,000 launches, each after the program walks 1 MiB of memory, as a
#   framework's own work between launches does, on a simulated 32 KiB L1 and 512 KiB
#   last-level cache; the L1 misses the hook adds beyond the driver's are the cache lines
#   Baton's path touches that have to come from further away.
#
# Counts do not depend on the machine's load, so they compare commits where timings on a
# shared machine cannot. What a launch costs in time on a GPU is measured by
# scripts/gpu/interposer/run.sh.
#
#   scripts/launch_cost.sh            prints one JSON line
#   scripts/launch_cost.sh legacy     the same on the legacy default stream, beside 16 idle
#                                     blocking streams (which CUDA orders it with)
#   scripts/launch_cost.sh blocking   on a blocking stream, the legacy stream used once before
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

STREAM=created
EXTRA=()
case "${1:-}" in
  legacy) STREAM=legacy; EXTRA=(LAUNCH_RATE_LEGACY=16) ;;
  blocking) STREAM=blocking; EXTRA=(LAUNCH_RATE_BLOCKING=1) ;;
  "") ;;
  *) echo "launch_cost.sh: unknown mode $1 (legacy or blocking)" >&2; exit 2 ;;
esac

run() {
  local name=$1; shift
  env LD_LIBRARY_PATH="$W" "${EXTRA[@]}" LD_PRELOAD="$PWD/$T/libbaton_interposer.so" BATON_SCHEDULER=local \
    "$@" "$T/runtime-like" launch-rate >"$W/$name.out" 2>"$W/$name.err" ||
    { echo "launch_cost.sh: the $name run failed:" >&2; cat "$W/$name.err" >&2; exit 1; }
  grep -q '^launch-rate ok' "$W/$name.out"
  callgrind_annotate --inclusive=yes --threshold=100 --show="$SHOW" "$W/$name.cg" \
    >"$W/$name.txt" 2>/dev/null
}

SHOW=Ir
run warm valgrind --tool=callgrind --callgrind-out-file="$W/warm.cg"
SHOW=D1mr,D1mw
run cold LAUNCH_RATE_EVICT_KB=1024 LAUNCH_RATE_ROUNDS=5 valgrind --tool=callgrind \
  --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=524288,8,64 \
  --callgrind-out-file="$W/cold.cg"

python3 - "$W" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$STREAM" <<'PY'
import json, re, sys
w, commit, stream = sys.argv[1], sys.argv[2], sys.argv[3]

def launch_totals(path):
    """Inclusive counts of cuLaunchKernel as exported by the interposer and by the driver."""
    found = {}
    for line in open(path):
        # The same function may be listed under several names (inlined parts, with or without
        # its library): the largest inclusive count is the whole of it.
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(?:([\d,]+)\s+\([^)]*\)\s+)?(\S*):cuLaunchKernel(?:\s|$)", line)
        if not m:
            continue
        counts = [int(x.replace(",", "")) for x in m.group(1, 2) if x]
        where = m.group(3) + line[m.end():]
        lib = "hook" if "interposer" in where else "driver" if "fake" in where else None
        if lib and sum(counts) > sum(found.get(lib, [0])):
            found[lib] = counts
    if set(found) != {"hook", "driver"}:
        sys.exit(f"launch_cost.sh: cuLaunchKernel not found in {path}")
    return found

warm, cold = launch_totals(f"{w}/warm.txt"), launch_totals(f"{w}/cold.txt")
n_warm, n_cold = 32000, 7000
added_ir = (warm["hook"][0] - warm["driver"][0]) / n_warm
added_rd = (cold["hook"][0] - cold["driver"][0]) / n_cold
added_wr = (cold["hook"][1] - cold["driver"][1]) / n_cold
print(json.dumps({
    "commit": commit,
    "stream": stream,
    "driver_instructions_per_launch": round(warm["driver"][0] / n_warm),
    "added_instructions_per_launch": round(added_ir),
    "cold_driver_l1_misses_per_launch": round(sum(cold["driver"]) / n_cold, 1),
    "cold_added_l1_read_misses_per_launch": round(added_rd, 1),
    "cold_added_l1_write_misses_per_launch": round(added_wr, 1),
}))
PY
