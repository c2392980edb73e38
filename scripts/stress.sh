#!/usr/bin/env bash
# The tests under load: a command run N times in a row (default 20) with one busy loop per CPU
# beside it, so every test that races the clock meets a machine slower than CI's. Each run's
# result and time go to target/stress/runs.txt and its output to target/stress/run-K.log; the
# last line says how many passed.
#
#   scripts/stress.sh [N] [-- COMMAND...]     (default command: scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

runs=20
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    runs=$1
    shift
fi
[ "${1:-}" = "--" ] && shift
cmd=("$@")
[ ${#cmd[@]} -gt 0 ] || cmd=(bash scripts/test.sh)

out=target/stress
mkdir -p "$out"
: >"$out/runs.txt"
hogs=()
stop_hogs() {
    [ ${#hogs[@]} -gt 0 ] && kill "${hogs[@]}" 2>/dev/null || true
}
trap stop_hogs EXIT
for _ in $(seq "$(nproc)"); do
    bash -c 'while :; do :; done' &
    hogs+=($!)
done
echo "stress: ${cmd[*]}, $runs runs, ${#hogs[@]} busy loops beside"
passed=0
for k in $(seq "$runs"); do
    start=$(date +%s)
    if "${cmd[@]}" >"$out/run-$k.log" 2>&1; then
        result=pass
        passed=$((passed + 1))
    else
        result=FAIL
    fi
    line="run $k: $result in $(($(date +%s) - start)) s"
    echo "$line" | tee -a "$out/runs.txt"
done
echo "stress: $passed of $runs passed" | tee -a "$out/runs.txt"
[ "$passed" -eq "$runs" ]
