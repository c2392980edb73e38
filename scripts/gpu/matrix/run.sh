#!/usr/bin/env bash
# The co-location matrix on the GPU machine: `scripts/gpu/matrix/run.sh --out DIR
# [--setups S,M,P] [--repeats N]` (matrix.py --help says the rest). Uses the release binaries in
# .gpu/ (baton and libbaton_interposer.so side by side) or else target/release/; writes the raw
# results, the summary and the table to DIR.
set -euo pipefail
cd "$(dirname "$0")/../../.."
if [ -z "${BATON_BIN:-}" ]; then
    BATON_BIN=target/release/baton
    [ -x .gpu/baton ] && BATON_BIN=.gpu/baton
fi
export BATON_BIN="$(realpath "$BATON_BIN")"
exec python3 scripts/gpu/matrix/matrix.py "$@"
