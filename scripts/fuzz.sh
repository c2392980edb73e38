#!/usr/bin/env bash
# Fuzzes Baton's parsers of outside input on the nightly toolchain, each for SECONDS (default
# 60), or for RUNS inputs each when RUNS is set, and reports how many inputs ran:
#
#   scripts/fuzz.sh 300                      # every target, 5 minutes each
#   scripts/fuzz.sh 60 agent_config          # one target
#   RUNS=10000000 scripts/fuzz.sh 0          # the campaign: 10 million inputs each
#
# Targets (fuzz/fuzz_targets/): decode_frames (the protocol's frame decoder and validator),
# agent_config (the BATON_*/XSCHED_* settings), cli_values (queues, policy names and hint
# numbers typed on the command line), proc_files (/proc/PID/stat and status). The parsers are
# safe Rust, so the targets build without a sanitizer (-s none: 3-5x the inputs per second);
# libFuzzer still catches panics, overflows (debug assertions are on) and hangs (-timeout).
#
# Installs cargo-fuzz if it is missing. The working corpus, fuzz/corpus/TARGET (not committed),
# starts from the committed, minimized one, fuzz/seeds/TARGET, which the stable test suite
# replays (crates/lab/tests/fuzz_corpus.rs); refresh it after a long run with
# `cargo +nightly fuzz cmin -s none TARGET fuzz/corpus/TARGET` and copy the result to
# fuzz/seeds/TARGET. Exits non-zero if an input crashed a target; the input is saved under
# fuzz/artifacts/TARGET/ — reproduce it with `cargo +nightly fuzz run -s none TARGET FILE`,
# then add it to fuzz/seeds/TARGET, where the replay keeps it as a regression test.
set -euo pipefail

secs="${1:-60}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || { [ "$secs" -eq 0 ] && [ -z "${RUNS:-}" ]; }; then
    echo "usage: $0 SECONDS [TARGET...] (SECONDS a positive whole number, or 0 with RUNS=N)" >&2
    exit 2
fi
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(decode_frames agent_config cli_values proc_files)
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: installing it (cargo install cargo-fuzz)..." >&2
    cargo install cargo-fuzz --locked
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for target in "${targets[@]}"; do
    corpus="fuzz/corpus/$target"
    mkdir -p "$corpus"
    if [ -d "fuzz/seeds/$target" ]; then
        cp -n fuzz/seeds/"$target"/* "$corpus"/ 2>/dev/null || true
    fi
    if [ "$target" = decode_frames ]; then
        cargo run --quiet -p baton-protocol --features testing --example fuzz_seeds -- "$corpus" >&2
    fi
    if [ -n "${RUNS:-}" ]; then
        limit=(-runs="$RUNS")
        what="$RUNS inputs"
    else
        limit=(-max_total_time="$secs")
        what="${secs}s"
    fi
    echo "fuzzing $target for $what..." >&2
    start=$(date +%s)
    set +e
    cargo +nightly fuzz run -O -s none "$target" "$corpus" -- \
        "${limit[@]}" -timeout=10 -print_final_stats=1 >"$log" 2>&1
    status=$?
    set -e
    took=$(( $(date +%s) - start ))
    runs="$(grep -oE 'Done [0-9]+ runs' "$log" | tail -n 1 | grep -oE '[0-9]+' || true)"
    if [ "$status" -ne 0 ]; then
        tail -n 60 "$log" >&2
        echo "CRASH: the $target target failed (exit $status); the input is under fuzz/artifacts/$target/" >&2
        exit 1
    fi
    if [ -z "$runs" ]; then
        tail -n 30 "$log" >&2
        echo "the fuzzer exited without reporting its runs; see the log above" >&2
        exit 1
    fi
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" || true
    echo "fuzz $target: $runs inputs ran in ${took}s without a crash (corpus: $(find "$corpus" -type f | wc -l) inputs)"
done
