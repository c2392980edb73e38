#!/usr/bin/env bash
# `baton daemon --mps-server` with NVIDIA's real MPS control daemon, end to end on a GPU:
#   1. the daemon starts a control daemon of its own (pipe and log folders beside its socket);
#   2. a service (ResNet-50 inference, priority 10) and a training job (priority 0) run under
#      `baton run` on it: both must be MPS clients of that server;
#   3. the daemon is killed with kill -9 while both run; a new daemon on the same socket must
#      adopt the control daemon (the same process, not a second one);
#   4. the training job is killed with kill -9: the service must finish, its digest equal to a
#      native run's;
#   5. a client that makes an illegal memory access runs beside a fresh service: what happens to
#      the service is recorded (NVIDIA's MPS decides it; Baton cannot change it);
#   6. the daemon is stopped with no client left: the control daemon must be gone and both
#      folders removed.
#
#   scripts/gpu/reliability/mps_server.sh OUT_DIR
#
# Needs nvidia-cuda-mps-control on PATH, PyTorch and CuPy, and `baton` + `libbaton_interposer.so`
# (BATON_BIN, else .gpu/bin/baton, else target/release/baton). Writes OUT_DIR/summary.json
# (schema baton.gpu-mps-server/1) and the logs; exits 1 if a required step failed.
set -uo pipefail
out="${1:?usage: $0 OUT_DIR}"
root="$(cd "$(dirname "$0")/../../.." && pwd)"
here="$root/scripts/gpu/reliability"
if [ -z "${BATON_BIN:-}" ]; then
    BATON_BIN="$root/target/release/baton"
    [ -x "$root/.gpu/bin/baton" ] && BATON_BIN="$root/.gpu/bin/baton"
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d /tmp/baton-mps-XXXXXX)"
export BATON_SOCKET="$work/baton.sock"
pipe="$BATON_SOCKET.mps/pipe"
declare -A step

wait_progress() { # FILE MIN [SECONDS]
    local t=0
    until [ -f "$1" ] && [ "$(cat "$1" 2>/dev/null || echo 0)" -ge "$2" ]; do
        sleep 0.1; t=$((t + 1))
        if [ "$t" -ge "${3:-1200}" ]; then return 1; fi
    done
    return 0
}
control_pids() { pgrep -f 'nvidia-cuda-mps-control -d' | sort | tr '\n' ' '; }
server_list() { CUDA_MPS_PIPE_DIRECTORY="$pipe" timeout 10 nvidia-cuda-mps-control <<< get_server_list 2>&1 | tr '\n' ' '; }
start_daemon() { # LOG
    "$BATON_BIN" daemon --mps-server > "$1" 2>&1 &
    DAEMON=$!
    local t=0
    until "$BATON_BIN" list --json > /dev/null 2>&1; do
        sleep 0.1; t=$((t + 1))
        if [ "$t" -ge 300 ]; then return 1; fi
    done
    return 0
}

echo "native service for the reference digest..." >&2
python3 "$here/workload.py" infer --requests 3000 --out "$out/native-infer.json" > "$out/native-infer.log" 2>&1
native_digest=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['digest'])" "$out/native-infer.json" 2>/dev/null || echo none)

echo "1. daemon with an MPS server of its own" >&2
before=$(control_pids)
start_daemon "$out/daemon1.log" && step[start]=ok || step[start]=fail
sleep 1
first=$(control_pids)
[ -d "$pipe" ] && step[pipe_folder]=ok || step[pipe_folder]=fail
"$BATON_BIN" doctor > "$out/doctor.txt" 2>&1 || true
grep -q "own MPS server" "$out/doctor.txt" && step[doctor]=ok || step[doctor]=fail

echo "2. service and job under baton run on it" >&2
"$BATON_BIN" run --priority 0 -- python3 "$here/workload.py" train --steps 100000 \
    --out "$out/train.json" --progress "$work/train.progress" > "$out/train.log" 2>&1 &
train=$!
wait_progress "$work/train.progress" 5 1200 && step[train_started]=ok || step[train_started]=fail
"$BATON_BIN" run --priority 10 -- python3 "$here/workload.py" infer --requests 3000 \
    --out "$out/infer.json" --progress "$work/infer.progress" > "$out/infer.log" 2>&1 &
infer=$!
wait_progress "$work/infer.progress" 50 1200 && step[infer_started]=ok || step[infer_started]=fail
servers=$(server_list)
"$BATON_BIN" list > "$out/list-before-kill.txt" 2>&1 || true
[ -n "$(echo "$servers" | tr -d ' ')" ] && step[clients_on_server]=ok || step[clients_on_server]=fail
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true

echo "3. kill -9 of the daemon; a new one adopts the control daemon" >&2
kill -9 "$DAEMON"; wait "$DAEMON" 2>/dev/null
sleep 1
start_daemon "$out/daemon2.log" && step[restart]=ok || step[restart]=fail
sleep 2
second=$(control_pids)
grep -q "adopted the MPS" "$out/daemon2.log" && [ "$first" = "$second" ] \
    && step[adopted]=ok || step[adopted]=fail
"$BATON_BIN" list > "$out/list-after-adopt.txt" 2>&1 || true

echo "4. kill -9 of the job; the service finishes" >&2
sleep 2
kill -9 "$train"; pkill -9 -f "workload.py train" ; wait "$train" 2>/dev/null
wait "$infer"; infer_rc=$?
infer_digest=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['digest'])" "$out/infer.json" 2>/dev/null || echo none)
[ "$infer_rc" = 0 ] && [ "$infer_digest" = "$native_digest" ] && step[service_survives_kill]=ok || step[service_survives_kill]=fail

echo "5. a client's illegal address beside a service" >&2
"$BATON_BIN" run --priority 10 -- python3 "$here/workload.py" infer --requests 3000 \
    --out "$out/infer2.json" --progress "$work/infer2.progress" > "$out/infer2.log" 2>&1 &
infer2=$!
wait_progress "$work/infer2.progress" 50 1200
"$BATON_BIN" run --priority 0 -- python3 -c "
import cupy as cp
k = cp.RawKernel(r'extern \"C\" __global__ void bad(unsigned long long p){ *(volatile int*)p = 1; }', 'bad')
k((1,), (1,), (cp.uint64(16),))
cp.cuda.runtime.deviceSynchronize()
" > "$out/illegal.log" 2>&1
illegal_rc=$?
wait "$infer2"; infer2_rc=$?
infer2_digest=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['digest'])" "$out/infer2.json" 2>/dev/null || echo none)
servers_after=$(server_list)

echo "6. stop with no client: control daemon gone, folders removed" >&2
sleep 1
kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null
sleep 2
third=$(control_pids)
[ -z "$(comm -13 <(echo "$before" | tr ' ' '\n' | sort) <(echo "$third" | tr ' ' '\n' | sort) | tr -d '\n ')" ] \
    && step[control_stopped]=ok || step[control_stopped]=fail
[ ! -e "$BATON_SOCKET.mps" ] && step[folders_removed]=ok || step[folders_removed]=fail

status=0
for k in start pipe_folder doctor train_started infer_started clients_on_server restart adopted service_survives_kill control_stopped folders_removed; do
    [ "${step[$k]:-fail}" = ok ] || status=1
done
python3 - "$out/summary.json" <<EOF
import json, sys
steps = {$(for k in "${!step[@]}"; do printf '"%s": "%s", ' "$k" "${step[$k]}"; done)}
json.dump({
    "schema": "baton.gpu-mps-server/1",
    "steps": steps,
    "control_pids": {"before": "$before", "started": "$first", "after_restart": "$second", "after_stop": "$third"},
    "server_list_with_clients": "$servers",
    "server_list_after_illegal": "$servers_after",
    "native_digest": "$native_digest",
    "service_digest_after_job_killed": "$infer_digest",
    "illegal_client_rc": $illegal_rc,
    "service_beside_illegal": {"rc": $infer2_rc, "digest": "$infer2_digest",
                               "identical": "$infer2_digest" == "$native_digest"},
    "passed": $status == 0,
}, open(sys.argv[1], "w"), indent=1)
EOF
cat "$out/summary.json"
rm -rf "$work"
exit "$status"
