#!/usr/bin/env bash
# Several best-effort jobs that yield by their time slice on one GPU, beside a registered,
# idle service: what each keeps, against the same jobs natively and with no service.
#   scripts/gpu/yielders/run.sh OUT_DIR [SECONDS] [KINDS: "flood small"] [CASES: all]
# A kind may mix kinds, "flood+small": the jobs of a case take them in turn.
# Uses .gpu/baton (else target/release/baton). Writes OUT_DIR/results.jsonl and prints a table.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUTD=${1:?OUT_DIR}; SECS=${2:-6}; KINDS=${3:-flood small}; CASES=${4:-all}
BATON=${BATON_BIN:-target/release/baton}; [ -x .gpu/baton ] && BATON=${BATON_BIN:-.gpu/baton}
BATON=$(realpath "$BATON")
mkdir -p "$OUTD"; RES="$OUTD/results.jsonl"; : > "$RES"
TMP=$(mktemp -d); export BATON_SOCKET=$TMP/baton.sock
"$BATON" daemon --socket "$BATON_SOCKET" --idle-exit 600 2> "$OUTD/daemon.log" &
DAEMON=$!
trap 'kill $DAEMON 2>/dev/null || true; pkill -f yielders/job.py 2>/dev/null || true; rm -rf $TMP' EXIT
for _ in $(seq 100); do "$BATON" list >/dev/null 2>&1 && break; sleep 0.1; done
JOB=${YIELDERS_JOB:-"python3 scripts/gpu/yielders/job.py"}

# case NAME SERVICE(none|baton) HOW(native|baton|baton:ENV=V) KIND N
case_() {
    local name=$1 service=$2 how=$3 kind=$4 n=$5 pids=() svc=""
    [ "$CASES" = all ] || [[ " $CASES " == *" $name "* ]] || return 0
    if [ "$service" = baton ]; then
        "$BATON" run --priority 10 -- $JOB idle $((SECS + 20)) > "$TMP/svc.out" &
        svc=$!
        for _ in $(seq 300); do grep -q ready "$TMP/svc.out" 2>/dev/null && break; sleep 0.1; done
    fi
    local under=()
    case $how in
        baton) under=("$BATON" run --priority 0 --) ;;
        baton:*) under=(env "${how#baton:}" "$BATON" run --priority 0 --) ;;
    esac
    local kinds
    IFS=+ read -ra kinds <<< "$kind"
    for i in $(seq "$n"); do
        "${under[@]}" $JOB "${kinds[$(((i - 1) % ${#kinds[@]}))]}" "$SECS" > "$TMP/$i.out" 2> "$OUTD/$name-$kind-$i.err" &
        pids+=($!)
    done
    local t0=$SECONDS
    for p in "${pids[@]}"; do timeout $((SECS + 120)) tail --pid="$p" -f /dev/null || kill "$p"; done
    if [ -n "$svc" ]; then kill "$svc" 2>/dev/null || true; pids+=("$svc"); fi
    wait "${pids[@]}" 2>/dev/null || true
    local got=""
    for i in $(seq "$n"); do
        local r; r=$(tail -n1 "$TMP/$i.out" 2>/dev/null || true)
        echo "{\"case\": \"$name\", \"service\": \"$service\", \"how\": \"$how\", \"kind\": \"$kind\", \"jobs\": $n, \"job\": $i, \"wall_s\": $((SECONDS - t0)), \"result\": ${r:-null}}" >> "$RES"
        got+="$(grep -o '"tflops": [0-9.]*' <<< "$r") "
    done
    echo "$name $kind x$n: $got($((SECONDS - t0)) s)"
}

for kind in $KINDS; do
    case_ alone none native "$kind" 1
    case_ native-pair none native "$kind" 2
    case_ baton-pair-no-service none baton "$kind" 2
    case_ baton-one-idle-service baton baton "$kind" 1
    case_ baton-pair-idle-service baton baton "$kind" 2
    case_ baton-pair-idle-service-slice2000 baton baton:BATON_YIELD_SLICE_US=2000 "$kind" 2
    case_ baton-pair-idle-service-count baton baton:BATON_INFLIGHT_US=0 "$kind" 2
    case_ native-trio none native "$kind" 3
    case_ baton-trio-idle-service baton baton "$kind" 3
done
echo "== while all of a case's jobs ran"
python3 scripts/gpu/yielders/report.py "$RES"
