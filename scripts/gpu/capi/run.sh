#!/usr/bin/env bash
# The Python examples of Baton's C ABI on a GPU, each natively, under `baton run` without the
# example's baton calls (--hints off) and with them (--hints on), repeats interleaved; one JSON
# line per run in OUT/results.jsonl, their summary in OUT/summary.json and OUT/table.md.
#
#   scripts/gpu/capi/run.sh OUT [REPEATS] [EXAMPLE...]
#
# EXAMPLE: llm_decode_beside_training, two_model_server, graph_replay_service (default: all).
# Needs the release `baton` and `libbaton_interposer.so` in .gpu/ (or BATON_BIN and
# BATON_INTERPOSER), PyTorch and Hugging Face transformers. The package is installed with pip
# from ./python into a private directory first (no network needed), as a user would.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:?usage: run.sh OUT [REPEATS] [EXAMPLE...]}
REPS=${2:-3}
shift $(( $# >= 2 ? 2 : $# ))
EXAMPLES=("$@")
[ ${#EXAMPLES[@]} -gt 0 ] || EXAMPLES=(llm_decode_beside_training two_model_server graph_replay_service)
BATON=${BATON_BIN:-$PWD/.gpu/baton}
INTERPOSER=${BATON_INTERPOSER:-$PWD/.gpu/libbaton_interposer.so}
mkdir -p "$OUT"
LOG=$OUT/log.txt
: >"$LOG"

PKG=$(mktemp -d)
if python3 -m pip install --quiet --no-build-isolation --no-deps --target "$PKG" ./python >>"$LOG" 2>&1; then
    echo "pip install ./python: ok" | tee -a "$LOG"
else
    echo "pip install ./python failed (see log); using python/src" | tee -a "$LOG"
    PKG=$PWD/python/src
fi
export PYTHONPATH=$PKG

SOCK_DIR=$(mktemp -d)
export BATON_SOCKET=$SOCK_DIR/baton.sock
"$BATON" daemon --socket "$BATON_SOCKET" >>"$LOG" 2>&1 &
DAEMON=$!
trap 'kill $DAEMON 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -S "$BATON_SOCKET" ] && break; sleep 0.1; done

# QUICK=1: a smoke run (few requests) to check the examples run at all.
requests() {
    case $1 in
        llm_decode_beside_training) [ -n "${QUICK:-}" ] && echo 4 || echo 20 ;;
        *) [ -n "${QUICK:-}" ] && echo 20 || echo 200 ;;
    esac
}
BE_SECONDS=$([ -n "${QUICK:-}" ] && echo 2 || echo 6)

for rep in $(seq "$REPS"); do
    for ex in "${EXAMPLES[@]}"; do
        # Interleaved, and the order rotated per repeat.
        modes=(native baton-off baton-on)
        r=$(( (rep - 1) % 3 ))
        modes=("${modes[@]:r}" "${modes[@]:0:r}")
        for mode in "${modes[@]}"; do
            tmp=$(mktemp)
            args=(python3 "$PWD/examples/python/$ex.py" --requests "$(requests "$ex")"
                  --be-seconds "$BE_SECONDS" --out "$tmp")
            case $mode in
                native) cmd=("${args[@]}" --hints off) ;;
                baton-off) cmd=("$BATON" run --interposer "$INTERPOSER" -- "${args[@]}" --hints off) ;;
                baton-on) cmd=("$BATON" run --interposer "$INTERPOSER" -- "${args[@]}" --hints on) ;;
            esac
            echo "== $ex $mode rep $rep" | tee -a "$LOG"
            start=$(date +%s)
            if "${cmd[@]}" >>"$LOG" 2>&1; then
                python3 - "$tmp" "$ex" "$mode" "$rep" >>"$OUT/results.jsonl" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d.update(example=sys.argv[2], mode=sys.argv[3], rep=int(sys.argv[4]))
print(json.dumps(d))
PY
                echo "   done in $(( $(date +%s) - start )) s" | tee -a "$LOG"
            else
                echo "   FAILED ($ex $mode rep $rep); see log" | tee -a "$LOG"
                echo "{\"example\": \"$ex\", \"mode\": \"$mode\", \"rep\": $rep, \"failed\": true}" >>"$OUT/results.jsonl"
            fi
            rm -f "$tmp"
        done
    done
done
python3 scripts/gpu/capi/summarize.py "$OUT/results.jsonl" "$OUT"
