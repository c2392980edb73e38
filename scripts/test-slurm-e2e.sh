#!/usr/bin/env bash
# The Slurm plugin end to end, on this machine: a single-node Slurm cluster (munge with a fresh
# key, slurmctld and slurmd, all in a temporary directory) whose plugstack.conf loads the SPANK
# plugin built from deploy/slurm/spank_baton.c, one Baton daemon, and batch jobs that run the
# runtime-like test app against the fake CUDA driver. It checks from `baton list --json` that
# each job's process is scheduled with the priority Slurm gave it:
#   --gpu-priority=10          -> 10 (the HP job)
#   nothing                    -> the site default, -5 (the BE job)
#   --gpu-priority=50          -> the site cap, 20
#   SLURM_JOB_QOS=high         -> 15, from plugstack.conf's qos:high=15 (no accounting
#                                 database here, so Slurm assigns no QoS: the job's
#                                 environment names it, as Slurm's does where it does)
# and that an srun step inside a job preloads the interposer once. Then jobs that claim more
# than Slurm gave them, once as root and once as nobody, each held by the daemon to the
# priority the plugin recorded for its step (--slurm-steps):
#   --gpu-priority=10, BATON_PRIORITY=99 in the job script          -> 10
#   no option (the site default), `baton run --priority 99`        -> -5
# (the daemon's --max-priority 20 would give nobody 20 and root 99). Then lets the jobs
# finish, checks that their steps' records are gone, and tears everything down, on failure too.
#
# Needs root (slurmd runs jobs as their users), a C compiler, cargo, python3, and Debian's
# slurm-wlm, munge and libslurm-dev. No GPU. No cgroup plugins (proctrack/linuxproc): the
# daemon finds each process's step by its ancestry.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

fail() {
    echo "slurm e2e: FAILED: $*" >&2
    exit 1
}

missing=()
for tool in slurmctld slurmd sbatch squeue sinfo scontrol munged mungekey cc cargo python3; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ -f /usr/include/slurm/spank.h ] || missing+=("slurm/spank.h")
if [ ${#missing[@]} -gt 0 ]; then
    fail "missing ${missing[*]} (Debian: apt-get install slurm-wlm munge libslurm-dev gcc python3)"
fi
[ "$(id -u)" -eq 0 ] || fail "slurmd must run as root to start jobs; run this as root"

echo "== build"
target=${CARGO_TARGET_DIR:-$repo/target}
cargo build --quiet --locked -p baton-cli -p baton-interposer -p baton-fake-cuda \
    -p baton-cuda-testapps
bin=$target/debug
baton=$bin/baton
interposer=$bin/libbaton_interposer.so
app=$bin/runtime-like
for f in "$baton" "$interposer" "$bin/libfake_cuda.so" "$app"; do
    [ -e "$f" ] || fail "$f was not built"
done

tmp=$(mktemp -d /tmp/baton-slurm.XXXXXX)
chmod 755 "$tmp"
export SLURM_CONF=$tmp/slurm.conf
daemon_pid=""
cleanup() {
    local rc=$?
    set +e
    local conf=$SLURM_CONF
    unset SLURM_CONF
    if [ -f "$tmp/slurmctld.pid" ]; then
        SLURM_CONF=$conf scancel --quiet --full --signal=KILL --user=root 2>/dev/null
        for _ in $(seq 50); do
            [ -z "$(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.2
        done
    fi
    # Each daemon by the pid it wrote, never by name: others may run their own.
    local pids=()
    for pidfile in "$tmp/slurmd.pid" "$tmp/slurmctld.pid" "$tmp/munge/munged.pid"; do
        [ -f "$pidfile" ] && pids+=("$(cat "$pidfile")")
    done
    [ -n "$daemon_pid" ] && pids+=("$daemon_pid")
    [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
    for _ in $(seq 50); do
        kill -0 "${pids[@]}" 2>/dev/null || break
        sleep 0.1
    done
    # What is left of this cluster (a slurmd or slurmstepd that ignored SIGTERM, a job's
    # process) carries its SLURM_CONF, which nothing else on the machine has.
    for env in /proc/[0-9]*/environ; do
        if grep -qzx "SLURM_CONF=$conf" "$env" 2>/dev/null; then
            local pid=${env#/proc/}
            kill -KILL "${pid%/environ}" 2>/dev/null
        fi
    done
    if [ "$rc" -ne 0 ]; then
        for log in slurmctld.log slurmd.log daemon.log munge/munged.log jobs/*.out; do
            [ -s "$tmp/$log" ] && { echo "--- $log (last lines)"; tail -n 15 "$tmp/$log"; }
        done >&2
    fi
    rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
    local limit=$1
    shift
    local deadline=$((SECONDS + limit))
    until "$@"; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.2
    done
}

echo "== fake driver, plugin, munge"
mkdir "$tmp/driver"
ln -s "$bin/libfake_cuda.so" "$tmp/driver/libcuda.so.1"
ln -s "$bin/libfake_cuda.so" "$tmp/driver/libcuda.so"
cc -Wall -Wextra -Werror -shared -fPIC -o "$tmp/spank_baton.so" deploy/slurm/spank_baton.c
# Readable by all (the key inside is not): nobody's sbatch reaches munged's socket.
mkdir -m 755 "$tmp/munge"
mungekey --create --keyfile="$tmp/munge/munge.key"
munged --force --socket="$tmp/munge/munge.sock" --key-file="$tmp/munge/munge.key" \
    --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munge/munged.log" \
    --seed-file="$tmp/munge/munged.seed" \
    || fail "munged did not start (its log follows)"

echo "== baton daemon"
socket=$tmp/baton.sock
steps=$tmp/steps
# As docs/CLUSTER.md has operators run it: a system daemon (its socket for the group of the
# jobs' users: nobody's here), the site's cap, and the plugin's records.
"$baton" --socket "$socket" daemon --system --group nogroup --max-priority 20 \
    --slurm-steps "$steps" >"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
wait_for 30 "$baton" --socket "$socket" list >/dev/null 2>&1 \
    || fail "the Baton daemon did not answer on $socket"

echo "== slurmctld, slurmd"
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
node=$(hostname -s)
mkdir "$tmp/state" "$tmp/spool"
cat >"$tmp/slurm.conf" <<EOF
ClusterName=batone2e
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
PlugStackConfig=$tmp/plugstack.conf
NodeName=$node NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=e2e Nodes=$node Default=YES MaxTime=5 State=UP
EOF
# The site: default -5, cap 20, QoS high 15; tasks preload the interposer just built and
# reach the daemon above.
echo "required $tmp/spank_baton.so default=-5 max=20 qos:high=15 qos:normal=0" \
    "interposer=$interposer socket=$socket steps=$steps" >"$tmp/plugstack.conf"
slurmctld || fail "slurmctld did not start"
slurmd -N "$node" || fail "slurmd did not start"
node_idle() { [ "$(sinfo -h -n "$node" -o %t 2>/dev/null)" = idle ]; }
wait_for 60 node_idle || fail "node $node not idle within 60 s: $(sinfo -h -o '%t %E' 2>&1)"

echo "== jobs"
go=$tmp/go
# Every job's files, nobody's included.
jobs=$tmp/jobs
mkdir -m 1777 "$jobs"
# Each job writes its shell's pid and then execs the app, so that pid is the app's. The
# burst scenario registers its stream, then waits for the go file. `as` runs sbatch as that
# user (empty: root).
submit() {
    local name=$1
    shift
    env -u BATON_PRIORITY -u BATON_SOCKET -u BATON_SCHEDULER -u LD_PRELOAD \
        LD_LIBRARY_PATH="$tmp/driver" FAKE_CUDA_LOG="$jobs/$name.log" BATON_TEST_GO="$go" \
        "$@" ${as:+setpriv --reuid="$as" --regid="$as" --clear-groups} \
        sbatch --parsable --job-name="$name" --output="$jobs/$name.out" --chdir="$jobs" \
        --wrap "$pre echo \$\$ > $jobs/$name.pid; exec $run $app burst" "${submit_args[@]}" \
        >/dev/null
}
as="" run="" pre=""
submit_args=(--gpu-priority=10); submit hp
# A step inside the BE job: its task inherits the batch task's LD_PRELOAD.
pre="srun printenv LD_PRELOAD > $jobs/nested.preload;"
submit_args=(); submit be
pre=""
submit_args=(--gpu-priority=50); submit cap
submit_args=(); submit qos SLURM_JOB_QOS=high
# Claims above what Slurm gave, as root and as nobody: BATON_PRIORITY set by the job script,
# and `baton run --priority 99`.
for who in root nobody; do
    as=""
    [ "$who" = nobody ] && as=65534
    pre="export BATON_PRIORITY=99;" run=""
    submit_args=(--gpu-priority=10); submit "env-$who"
    pre="" run="$baton run --priority 99"
    submit_args=(); submit "run-$who"
done
as="" pre="" run=""
all_jobs="hp be cap qos env-root run-root env-nobody run-nobody"
jobs_listed() {
    "$baton" --socket "$socket" list --json >"$tmp/list.json" 2>/dev/null || return 1
    python3 - "$tmp" $all_jobs <<'PY'
import json, pathlib, sys
tmp = pathlib.Path(sys.argv[1])
procs = {p["pid"]: p for p in json.loads((tmp / "list.json").read_text())["processes"]}
for name in sys.argv[2:]:
    pidfile = tmp / "jobs" / f"{name}.pid"
    p = pidfile.exists() and procs.get(int(pidfile.read_text() or 0))
    if not p or not p["queues"]:
        sys.exit(1)
PY
}
wait_for 60 jobs_listed || fail "the jobs' processes did not all reach the daemon within 60 s:
$(squeue 2>&1)
$(cat "$tmp/list.json" 2>/dev/null)"
python3 - "$tmp" <<'PY' || fail "a job's priority at the daemon is not the one Slurm gave"
import json, pathlib, sys
tmp = pathlib.Path(sys.argv[1])
procs = {p["pid"]: p for p in json.loads((tmp / "list.json").read_text())["processes"]}
expected = {
    "hp": (10, 0, "--gpu-priority=10"),
    "be": (-5, 0, "no option: the site default"),
    "cap": (20, 0, "--gpu-priority=50: the site cap"),
    "qos": (15, 0, "SLURM_JOB_QOS=high: qos:high"),
    "env-root": (10, 0, "--gpu-priority=10, BATON_PRIORITY=99"),
    "run-root": (-5, 0, "the site default, baton run --priority 99"),
    "env-nobody": (10, 65534, "--gpu-priority=10, BATON_PRIORITY=99"),
    "run-nobody": (-5, 65534, "the site default, baton run --priority 99"),
}
bad = False
for name, (want, uid, why) in expected.items():
    p = procs[int((tmp / "jobs" / f"{name}.pid").read_text())]
    got = [h["priority"] for h in p["hints"] if isinstance(h, dict) and "priority" in h]
    ok = got == [want] and p["uid"] == uid
    bad |= not ok
    print(f"  {name:<10} pid {p['pid']:<7} uid {p['uid']:<5} queues {len(p['queues'])}"
          f"  priority {got[0] if got else None} (want {want}, {why}) {'ok' if ok else 'WRONG'}")
    if not ok:
        print(f"       its hints {p['hints']}, its queues' {[q['hints'] for q in p['queues']]}")
sys.exit(1 if bad else 0)
PY
records=$(ls "$steps")
echo "  the steps' records:" $records
grep -q "asked for a priority above its cap" "$tmp/daemon.log" \
    || fail "the daemon's log does not say it lowered a claim"

nested=$(cat "$jobs/nested.preload")
[ "$nested" = "$interposer" ] \
    || fail "an srun step inside a job preloads '$nested', not the interposer once"
echo "  a step inside a job preloads the interposer once"

echo "== jobs finish"
touch "$go"
jobs_done() { [ -z "$(squeue -h -o %i 2>/dev/null)" ]; }
wait_for 60 jobs_done || fail "jobs still queued or running after 60 s: $(squeue 2>&1)"
for name in $all_jobs; do
    out=$(cat "$jobs/$name.out")
    [ "$out" = "burst ok n=8" ] || fail "job $name printed: $out"
done
# The plugin removes each step's record when the step ends.
wait_for 30 test -z "$(ls "$steps")" || fail "records left after the jobs ended: $(ls "$steps")"
echo "  no record is left"
echo "slurm e2e: ok (HP 10, BE the site default -5, over the cap 20, QoS high 15; claims of 99" \
    "held to 10 and -5, root's and nobody's)"
