#!/usr/bin/env bash
# HP inference on GPU 0 beside a RANKS-rank DDP training job over GPUs 0..RANKS-1 (NCCL), each
# phase on its own: HP alone, training alone, both natively, both under Baton with the gang
# left to each GPU (--gang independent) and held together (--gang together). HP is ResNet-50
# fp16 batch-8 inference (scripts/gpu/apps/resnet_workload.py); training is
# scripts/gpu/multigpu/ddp_train.py under torchrun. Results: OUT/hp-PHASE.json,
# OUT/train-PHASE.jsonl, OUT/list-PHASE.json (`baton list --by-device --json` mid-run) and the
# log.
#
#   scripts/gpu/multigpu/run.sh OUT RANKS [SECONDS]
#
# RANKS: 2 or 4, at most the GPUs present; or 1, the rehearsal on one GPU: the one rank shares
# GPU 0 with HP and names it by UUID in CUDA_VISIBLE_DEVICES while HP names it by index, so
# list-*.json must show both on one device. Needs the release `baton` and
# libbaton_interposer.so in .gpu/ (or BATON_BIN and BATON_INTERPOSER), PyTorch and nvidia-smi.
# HP starts 8 s after the training job (its start-up) and runs SECONDS - 10.
set -euo pipefail
cd "$(dirname "$0")/../../.."
usage="usage: run.sh OUT RANKS [SECONDS]   (RANKS: 2 or 4; 1 rehearses on one GPU)"
OUT=${1:?$usage}
RANKS=${2:?$usage}
SECONDS_EACH=${3:-60}
case "$RANKS" in 1 | 2 | 4) ;; *) echo "RANKS must be 1, 2 or 4, not $RANKS; $usage" >&2; exit 2 ;; esac
[[ "$SECONDS_EACH" =~ ^[0-9]+$ ]] && [ "$SECONDS_EACH" -ge 20 ] ||
    { echo "SECONDS must be a whole number of seconds, at least 20; $usage" >&2; exit 2; }
GPUS=$(nvidia-smi -L | grep -c '^GPU ' || true)
[ "$GPUS" -ge "$RANKS" ] || { echo "$RANKS ranks need $RANKS GPUs; nvidia-smi lists $GPUS" >&2; exit 2; }
BATON=${BATON_BIN:-$PWD/.gpu/baton}
INTERPOSER=${BATON_INTERPOSER:-$PWD/.gpu/libbaton_interposer.so}
for f in "$BATON" "$INTERPOSER"; do
    [ -e "$f" ] || { echo "missing $f: build with cargo build --release and copy it to .gpu/" >&2; exit 2; }
done
python3 -c 'import torch' || { echo "PyTorch is needed" >&2; exit 2; }
# One rank: the training job names GPU 0 by its UUID, HP by its index.
TRAIN_DEVICES=
[ "$RANKS" -eq 1 ] && TRAIN_DEVICES=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i 0)
mkdir -p "$OUT"
LOG=$OUT/log.txt
: >"$LOG"
nvidia-smi -L | tee -a "$LOG"
HP_ARGS=(scripts/gpu/apps/resnet_workload.py infer --seconds "$((SECONDS_EACH - 10))")

# $1 phase, $2 "baton"/"native", $3 gang mode (with baton).
train() {
    local phase=$1 how=$2
    local cmd=(env ${TRAIN_DEVICES:+CUDA_VISIBLE_DEVICES=$TRAIN_DEVICES} torchrun --standalone --nproc-per-node "$RANKS"
        scripts/gpu/multigpu/ddp_train.py --seconds "$SECONDS_EACH" --out "$OUT/train-$phase.jsonl")
    if [ "$how" = baton ]; then
        "$BATON" run --interposer "$INTERPOSER" --priority 0 -- "${cmd[@]}" >>"$LOG" 2>&1
    else
        "${cmd[@]}" >>"$LOG" 2>&1
    fi
}
hp() {
    local phase=$1 how=$2
    if [ "$how" = baton ]; then
        CUDA_VISIBLE_DEVICES=0 "$BATON" run --interposer "$INTERPOSER" --priority 10 -- \
            python3 "${HP_ARGS[@]}" --out "$OUT/hp-$phase.json" >>"$LOG" 2>&1
    else
        CUDA_VISIBLE_DEVICES=0 python3 "${HP_ARGS[@]}" --out "$OUT/hp-$phase.json" >>"$LOG" 2>&1
    fi
}

echo "== hp alone" | tee -a "$LOG"
hp alone native
echo "== training alone" | tee -a "$LOG"
train alone native
echo "== both, native" | tee -a "$LOG"
train native native &
T=$!
sleep 8
hp native native
wait $T

for gang in independent together; do
    echo "== both, Baton, --gang $gang" | tee -a "$LOG"
    SOCK_DIR=$(mktemp -d)
    export BATON_SOCKET=$SOCK_DIR/baton.sock
    "$BATON" daemon --socket "$BATON_SOCKET" --gang "$gang" >>"$LOG" 2>&1 &
    DAEMON=$!
    for _ in $(seq 100); do [ -S "$BATON_SOCKET" ] && break; sleep 0.1; done
    train "gang-$gang" baton &
    T=$!
    sleep 8
    hp "gang-$gang" baton &
    H=$!
    sleep $((SECONDS_EACH / 2 - 8))
    "$BATON" list --by-device --json --socket "$BATON_SOCKET" >"$OUT/list-gang-$gang.json" || true
    wait $H
    wait $T
    "$BATON" daemon --stop --socket "$BATON_SOCKET" >>"$LOG" 2>&1 || true
    wait $DAEMON || true
done
echo "results in $OUT" | tee -a "$LOG"
