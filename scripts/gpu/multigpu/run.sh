#!/usr/bin/env bash
# The multi-GPU run on a machine with several GPUs: a graph-replayed service on GPU 0 beside a
# data-parallel training job over RANKS GPUs (default: every GPU), natively and under Baton with
# the job's ranks held per GPU or together, with and without a filler on GPU 1
# (scripts/gpu/multigpu/multigpu.py says how; `--help` lists the options passed through).
#
#   scripts/gpu/multigpu/run.sh OUT [RANKS] [multigpu.py options]
#
# Uses the release `baton` and libbaton_interposer.so side by side in .gpu/ (or BATON_BIN), PyTorch
# and nvidia-smi; writes OUT/raw.json, OUT/summary.json, OUT/table.md and OUT/workers.log.
set -euo pipefail
cd "$(dirname "$0")/../../.."
usage="usage: run.sh OUT [RANKS] [multigpu.py options]"
OUT=${1:?$usage}
shift
RANKS=()
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then
    RANKS=(--ranks "$1")
    shift
fi
if [ -z "${BATON_BIN:-}" ]; then
    BATON_BIN=target/release/baton
    [ -x .gpu/baton ] && BATON_BIN=.gpu/baton
fi
[ -x "$BATON_BIN" ] || { echo "no baton executable at $BATON_BIN: build with cargo build --release" >&2; exit 2; }
command -v nvidia-smi >/dev/null || { echo "nvidia-smi is needed" >&2; exit 2; }
python3 -c 'import torch' || { echo "PyTorch is needed" >&2; exit 2; }
export BATON_BIN="$(realpath "$BATON_BIN")"
export BATON_COMMIT="${BATON_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
mkdir -p "$OUT"
exec python3 scripts/gpu/multigpu/multigpu.py --out "$OUT" "${RANKS[@]}" "$@"
