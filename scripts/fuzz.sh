#!/usr/bin/env bash
# Fuzzes the protocol's frame decoder and validator for SECONDS (default 60) on the nightly
# toolchain, and reports how many inputs ran.
#
#   scripts/fuzz.sh 300
#
# Installs cargo-fuzz if it is missing. Seeds the corpus (fuzz/corpus/decode_frames, kept
# between runs) with every sample message. Exits non-zero if an input crashed the target; the
# input is saved under fuzz/artifacts/decode_frames/ — reproduce it with
# `cargo +nightly fuzz run decode_frames FILE`, then add it as a regression test calling
# `baton_protocol::fuzzing::check_input`.
set -euo pipefail

secs="${1:-60}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -eq 0 ]; then
    echo "usage: $0 SECONDS (a positive whole number)" >&2
    exit 2
fi
target=decode_frames
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: installing it (cargo install cargo-fuzz)..." >&2
    cargo install cargo-fuzz --locked
fi

corpus="fuzz/corpus/$target"
mkdir -p "$corpus"
cargo run --quiet -p baton-protocol --features testing --example fuzz_seeds -- "$corpus" >&2

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
echo "fuzzing $target for ${secs}s..." >&2
set +e
cargo +nightly fuzz run "$target" "$corpus" -- \
    -max_total_time="$secs" -print_final_stats=1 >"$log" 2>&1
status=$?
set -e

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
echo "fuzz $target: $runs inputs ran in ${secs}s without a crash (corpus: $(find "$corpus" -type f | wc -l) inputs)"
