#!/usr/bin/env python3
"""The co-location matrix, second edition: does Baton keep a service at its standalone latency
AND give the best-effort job what the service leaves, on the shapes production runs?

  matrix.py --out DIR [--setups S,M,P] [--services Rg25,Rg60,Dg,Be] [--jobs G,T]
            [--repeats 3] [--samples 1000] [--unpinned] [--modes native,baton] [--budget-s 560]

Services (services.py), open loop (Poisson arrivals, latency from the planned arrival):
Rg25 and Rg60, ResNet-50 b8 replayed as one CUDA graph per request at 25 % and 60 % of its
capacity alone (measured at the start of each part); Dg, a decoder whose every token is one
graph launch, 64-token requests arriving at half its capacity, judged per token; Be, BERT-base
b1 eager at 40 %, the launch-bound control. Capacity is one over a request's time alone in
open loop (calibrate()). Jobs: G bf16 GEMM flood, T ResNet-50 training. For the lab, only when
named: the services Mm60 and Mg60 and the job K (services.py says what each is).
Setups: S separate processes (the GPU time-slices them), M separate processes under MPS
(its control daemon started and stopped here), P one process (the service on a high-priority
stream, the job in a thread).

Modes: native; baton (`baton run --priority 10 --` for the service, `--priority 0 --` for
the job, P: `baton run --` for the process); native-split (P: the job's work on a second GPU,
MATRIX_SPLIT_DEVICE or cuda:1, the bound for one process). Alternatives to the default
(only when --modes names them) are in EXTRA_MODES. Every Baton mode has its own
daemon, started here on the part's CPUs that neither role uses.

Method (docs/benchmarks/matrix/README.md): the workers start once per part and stay warm;
each repeat measures each job alone, every service alone, then for each job and mode (modes
rotate from repeat to repeat) the job floods while the services run one after another with
the same arrival seeds as every other mode of the repeat. The job's progress counts inside
each service's window. With --unpinned, one more repeat (S and M) with every process, the
daemons included, allowed on all of the part's CPUs, as users run it. Each measurement stops
starting requests past --cap times its planned span (what is left then is a lower bound:
services.py). Writes DIR/raw-<setups>-<jobs>[-r<first>].json after every measurement, then
analyze.py's summary of every raw file in DIR. With MATRIX_LIST=SECONDS, every Baton mode's
`baton list --used` every SECONDS into DIR/list-<setup>.txt: what each queue was told (its
window, whether it is held) while the cells ran. With MATRIX_SMI=MS, the GPU's SM clock, power
and clock-event reasons every MS milliseconds into DIR/smi-<setup>.csv (nvidia-smi), headed by
the offset that maps the records' CLOCK_MONOTONIC times onto its wall-clock timestamps: whether
the GPU ran slower beside a job (beside the GEMM flood an H200 sits at its power cap). With
MATRIX_GPU_TIME=1 the workers also time each one-request service's request on the GPU
(services.py's GpuSpan; with MATRIX_GPU_START=1 its start too), which analyze.py splits as it
splits the service times. Every Baton worker writes its interposer report at exit
(BATON_REPORT); the raw file keeps each queue's counts as `reports` by SETUP/MODE-ROLE, and the
log says what each stream's suspensions found in flight (inflight_at_suspend).
"""

import argparse
import importlib.metadata
import json
import os
import platform
import select
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
import analyze  # noqa: E402
import hold_lag  # noqa: E402
from side_by_side import gpu_count  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "apps"))
from mps import mps  # noqa: E402

# The services: name -> (the service in services.py, load: its share of its capacity alone).
SERVICES = {"Rg25": ("Rg", 0.25), "Rg60": ("Rg", 0.60), "Dg": ("Dg", 0.50), "Be": ("Be", 0.40)}
# Services a run may name but the headline does not use (services.py says what each is).
LAB_SERVICES = {"Mm60": ("Mm", 0.60), "Mg60": ("Mg", 0.60)}
ALL_SERVICES = {**SERVICES, **LAB_SERVICES}
JOBS = ("G", "T")
# Jobs a run may name but the headline does not use (services.py says what each is).
LAB_JOBS = ("K",)
# How long the job floods before a service's window opens (its first steps fill the pipeline).
RAMP_S = 0.5
# How long each job runs alone in a repeat.
JOB_ALONE_S = float(os.environ.get("MATRIX_JOB_ALONE_S", "3"))
# The modes of each setup's matrix.
MODES = {"S": ["native", "baton"], "M": ["native", "baton"], "P": ["native", "native-split", "baton"]}
# How each Baton mode runs the roles: `baton run` arguments per role ("hp", "be"; in P "both"),
# the environment each role adds, and the arguments of the mode's daemon.
BATON_MODES = {
    "baton": {"hp": ["--priority", "10"], "be": ["--priority", "0"], "both": []},
}
# Alternatives to the default, run only when --modes names them. (The candidates that chose
# today's defaults ran at 52a8af1, where this table held them; each raw file records the
# definition of every mode it ran.)
EXTRA_MODES = {
    # The job's cuBLAS GEMMs never split (BATON_GEMM_PIECE_US=0): the defaults before
    # splitting, to measure what the pieces do against what the hold alone did.
    "whole": {"be": ["--priority", "0"], "be_env": {"BATON_GEMM_PIECE_US": "0"}},
    # The job held back whenever the service has work (`--hold`), without MPS too.
    "hold": {"be": ["--priority", "0", "--hold"]},
    # The job yielding (`--yield`): under MPS, its kernels on 85 % of the SMs while outranked.
    "yield": {"be": ["--priority", "0", "--yield"]},
    # Under MPS, SMs kept for the service before its requests arrive: the job yielding on half
    # of them from the moment the service is registered.
    "yield50": {"be": ["--priority", "0", "--yield"], "be_env": {"BATON_YIELD_SMS": "50%"}},
    # Under MPS, held back as by default and, from the moment the service is registered, its
    # kernels kept to part of the SMs (BATON_YIELD_SMS without --yield): SMs free for a request
    # that arrives while one of the job's long kernels runs, which no hold takes back.
    "holdsms90": {"be": ["--priority", "0"], "be_env": {"BATON_YIELD_SMS": "90%"}},
    "holdsms75": {"be": ["--priority", "0"], "be_env": {"BATON_YIELD_SMS": "75%"}},
    "holdsms50": {"be": ["--priority", "0"], "be_env": {"BATON_YIELD_SMS": "50%"}},
    # Where no time slice of its own hands the GPU over (MPS), the job's work in flight bounded
    # by device time: the defaults until early refill (500 µs, one sync point behind the window),
    # and 250 and 100 µs as first measured, without early refill.
    "inflight500": {"be": ["--priority", "0"], "be_env": {"BATON_INFLIGHT_US": "500", "BATON_EARLY_REFILL": "off"}},
    "inflight250": {"be": ["--priority", "0"], "be_env": {"BATON_INFLIGHT_US": "250", "BATON_EARLY_REFILL": "off"}},
    "inflight100": {"be": ["--priority", "0"], "be_env": {"BATON_INFLIGHT_US": "100", "BATON_EARLY_REFILL": "off"}},
    # Sync points every half of what the budget admits (BATON_EARLY_REFILL): the job's window
    # refills before the GPU runs dry, which a budget of a few kernels otherwise lets happen
    # once per window; at 500 and 250 µs (refill250 is today's default, named).
    "refill": {"be": ["--priority", "0"], "be_env": {"BATON_EARLY_REFILL": "on", "BATON_INFLIGHT_US": "500"}},
    "refill250": {"be": ["--priority", "0"], "be_env": {"BATON_EARLY_REFILL": "on", "BATON_INFLIGHT_US": "250"}},
    # 100 µs with early refill, which the lab says keeps the job's share at 250 µs's while the
    # service's first token waits for less of the job's work.
    "refill100": {"be": ["--priority", "0"], "be_env": {"BATON_EARLY_REFILL": "on", "BATON_INFLIGHT_US": "100"}},
    # Time-sliced, the job both yielding by its slice (Level 3: 100 µs while outranked) and held
    # while the service has work: a request's graph then finds the job's channel empty after the
    # first pause of a busy period, so the requests queued behind it pay no hand-over each;
    # with the daemon's default linger (500 µs), and with none (the release still travels
    # through the daemon, a natural 60-150 µs).
    "holdl3": {"be": ["--priority", "0", "--hold", "--level", "3"]},
    "holdl3l0": {"be": ["--priority", "0", "--hold", "--level", "3"], "daemon": ["--linger-us", "0"]},
    # The same with the job's channel group taken off the GPU's run list while it is held
    # (BATON_L3_OFF): its work in flight then waits where it stopped instead of taking the GPU
    # back in each pause of the service's work, which costs the next request a hand-over.
    "holdoff": {"be": ["--priority", "0", "--hold", "--level", "3"], "be_env": {"BATON_L3_OFF": "on"}},
    # Time-sliced, the job's slice while outranked at 10 µs instead of 100: a request waits for
    # the rest of the job's slice and a switch (~0.2 ms) at each hand-over. Two jobs no longer
    # trade such slices (HPF gives them turns), which is what made a short one thrash.
    "yslice10": {"be": ["--priority", "0"], "be_env": {"BATON_YIELD_SLICE_US": "10"}},
    # Longer: beside a service bound by its launching (Be) every launch of it takes the GPU
    # from the job, and each hand-over costs the job too; a longer slice trades the service's
    # headroom there (x0.68-0.75 of alone) for the job's share.
    "yslice500": {"be": ["--priority", "0"], "be_env": {"BATON_YIELD_SLICE_US": "500"}},
    "yslice1000": {"be": ["--priority", "0"], "be_env": {"BATON_YIELD_SLICE_US": "1000"}},
    # Time-sliced, the yielding job's work in flight bounded by count only (BATON_INFLIGHT_US=0):
    # a budget of 250 µs admits one GEMM or two or three training kernels, so the job's channel
    # runs dry after each until its host launches the next, and whenever the service has
    # anything queued then, that is a hand-over each way (~0.2-0.26 ms of the job's time each,
    # docs/benchmarks/levels/). Screened: the job gains 3-8 points, but where it is held beside
    # a graph service at 60 % load the service lost its protection beside training (the
    # candidates page, "The yielding job's budget"); the budget now applies where a hold may come.
    "nobudget": {"be": ["--priority", "0"], "be_env": {"BATON_INFLIGHT_US": "0"}},
    # The other way (since a held job is held, 65db686, 100 µs bought no latency beyond the noise
    # and cost the job 10-15 points): 1 and 2 ms of device time in flight.
    "inflight1000": {"be": ["--priority", "0"], "be_env": {"BATON_INFLIGHT_US": "1000", "BATON_EARLY_REFILL": "off"}},
    "inflight2000": {"be": ["--priority", "0"], "be_env": {"BATON_INFLIGHT_US": "2000", "BATON_EARLY_REFILL": "off"}},
    # The linger (the job held for 500 µs after the service's work ends, in case more follows):
    # beside a graph service at 60 % load the gaps between requests average ~1.3 ms (Poisson),
    # of which 500 µs is about a third; a decoder's tokens follow in tens of µs.
    "linger0": {"be": ["--priority", "0"], "daemon": ["--linger-us", "0"]},
    "linger100": {"be": ["--priority", "0"], "daemon": ["--linger-us", "100"]},
    "linger250": {"be": ["--priority", "0"], "daemon": ["--linger-us", "250"]},
    # Under MPS, the job's client at MPS's below-normal priority level (CUDA_MPS_CLIENT_PRIORITY=1)
    # and the service's at normal: without Baton ("native": True runs the roles as native does,
    # with only the environment added), and beside Baton's defaults (since 082666d `baton run`
    # sets it itself for a program at priority 0, so `below` is `baton` there; it stays to
    # compare earlier builds).
    # Screening: the service waits for each request by polling an event, not by a
    # synchronization of its stream (services.py's MATRIX_SYNC).
    "pollsync": {"hp_env": {"MATRIX_SYNC": "poll"}},
    "native-pollsync": {"native": True, "hp_env": {"MATRIX_SYNC": "poll"}},
    "native-below": {"native": True, "be_env": {"CUDA_MPS_CLIENT_PRIORITY": "1"}},
    "below": {"be": ["--priority", "0"], "be_env": {"CUDA_MPS_CLIENT_PRIORITY": "1"}},
    "below100": {"be": ["--priority", "0"], "be_env": {"CUDA_MPS_CLIENT_PRIORITY": "1", "BATON_INFLIGHT_US": "100"}},
}
# Where native-split puts the job's work: a second GPU of the same machine.
SPLIT_DEVICE = os.environ.get("MATRIX_SPLIT_DEVICE", "cuda:1")
WORKER = os.environ.get("MATRIX_WORKER") or os.path.join(HERE, "services.py")


def parse_cpu_list(text):
    """A kernel CPU list ("0-3,8,10-11") as a sorted list of CPUs."""
    out = set()
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
    return sorted(out)


def cpu_siblings(n):
    """Each CPU's hardware threads (its core's CPUs, itself included), as the kernel lists them."""
    out = {}
    for c in range(n):
        try:
            with open(f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list") as f:
                out[c] = [x for x in parse_cpu_list(f.read()) if x < n] or [c]
        except (OSError, ValueError):
            out[c] = [c]
    return out


def cores(cpus, siblings):
    """CPUS as physical cores: one list of CPUs a core, in the order of their first CPU."""
    seen, out = set(), []
    for c in sorted(cpus):
        if c in seen:
            continue
        core = [x for x in siblings.get(c, [c]) if x in cpus] or [c]
        seen.update(core)
        out.append(core)
    return out


def machine_slice(n=None, spec=None, siblings=None):
    """The CPUs this part may use: all of the machine's, or with MATRIX_SLICE=K/N (parts side
    by side: side_by_side.py) the K-th of N equal parts of its physical cores, every hardware
    thread of a core in the same part."""
    n = n or os.cpu_count() or 1
    spec = os.environ.get("MATRIX_SLICE") if spec is None else spec
    if not spec:
        return list(range(n))
    k, parts = (int(x) for x in spec.split("/"))
    if not 0 <= k < parts:
        raise SystemExit(f"MATRIX_SLICE={spec}: want K/N with 0 <= K < N")
    cs = cores(range(n), siblings or cpu_siblings(n))
    if parts > len(cs):
        return list(range(n))
    size = len(cs) // parts
    return sorted(c for core in cs[k * size : (k + 1) * size] for c in core)


def cpu_sets(cpus, siblings=None):
    """The service's and the job's cores: the upper half of CPUS's physical cores, a quarter
    each, away from the first CPU (where interrupts land) and from the daemons; the rest
    (this script, the daemons, MPS). None where CPUS are fewer than 8."""
    if len(cpus) < 8:
        return None, None, list(cpus)
    cs = cores(cpus, siblings or cpu_siblings(max(cpus) + 1))
    m = len(cs)
    hp = [c for core in cs[m // 2 : m // 2 + m // 4] for c in core]
    be = [c for core in cs[m // 2 + m // 4 :] for c in core]
    rest = [c for c in cpus if c not in hp and c not in be] or list(cpus)
    return hp, be, rest


SLICE_CPUS = machine_slice()
HP_CPUS, BE_CPUS, REST_CPUS = cpu_sets(SLICE_CPUS)


def csv(cpus):
    return ",".join(str(c) for c in cpus) if cpus else ""


def repin(pid, cpus):
    """Moves every thread of PID onto CPUS (threads started later inherit it)."""
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                os.sched_setaffinity(int(tid), cpus)
            except OSError:
                pass
    except OSError:
        pass


def steal_s():
    """CPU time the hypervisor gave to others (all CPUs, seconds): a noise source on shared VMs."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def commit():
    """The commit the run measures: BATON_COMMIT, else the checkout's HEAD; a copy of the tree
    without its git directory (a lent GPU machine's) has neither, and says so before it runs."""
    if os.environ.get("BATON_COMMIT"):
        return os.environ["BATON_COMMIT"]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        head = None
    if head is not None and head.returncode == 0 and head.stdout.strip():
        return head.stdout.strip()
    print("matrix: no BATON_COMMIT and no git checkout here: the raw files will say commit 'unknown'", file=sys.stderr)
    return "unknown"


def machine():
    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        smi = "no nvidia-smi"

    def version(pkg):
        try:
            return importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            return None

    n = os.cpu_count() or 1
    return {
        "gpu": smi,
        "kernel": platform.release(),
        "cpus": n,
        "cores": len(cores(range(n), cpu_siblings(n))),
        "python": platform.python_version(),
        "torch": version("torch"),
        "transformers": version("transformers"),
    }


class WorkerError(Exception):
    pass


class Worker:
    """One services.py process: a JSON line per command, a JSON line per answer."""

    def __init__(self, name, cmd, env, log):
        self.name = name
        self.p = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, text=True, bufsize=1, cwd=ROOT
        )
        self.info = None

    def read(self, timeout):
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        if not r:
            raise WorkerError(f"{self.name}: no answer within {timeout:.0f} s")
        line = self.p.stdout.readline()
        if not line:
            raise WorkerError(f"{self.name}: exited (status {self.p.poll()})")
        obj = json.loads(line)
        if "error" in obj:
            raise WorkerError(f"{self.name}: {obj['error']}")
        return obj

    def call(self, timeout, **req):
        if self.p.poll() is not None:
            raise WorkerError(f"{self.name}: exited (status {self.p.returncode})")
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        return self.read(timeout)

    def close(self):
        try:
            if self.p.poll() is None:
                self.p.stdin.write('{"cmd": "quit"}\n')
                self.p.stdin.flush()
                self.p.wait(timeout=20)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            self.p.kill()
            self.p.wait()


class Part:
    """One setup's run: its daemons, its warm workers, its repeats."""

    def __init__(self, m, setup):
        self.m, self.a, self.setup = m, m.a, setup
        self.tmp = tempfile.mkdtemp(prefix=f"baton-matrix-{setup}.")
        self.env = dict(
            os.environ,
            PYTHONUNBUFFERED="1",
            TOKENIZERS_PARALLELISM="false",
            TRANSFORMERS_VERBOSITY="error",
            # The workers build only the services and jobs this run measures.
            MATRIX_SERVICES=",".join(sorted({ALL_SERVICES[s][0] for s in self.a.services})),
            MATRIX_JOBS=",".join(self.a.jobs),
        )
        self.daemons, self.workers, self.calib, self.socks = {}, {}, {}, {}

    def spec(self, mode):
        return BATON_MODES.get(mode) or EXTRA_MODES.get(mode)

    def scheduled(self, mode):
        """Whether MODE runs its roles under Baton (and so has a daemon of its own)."""
        spec = self.spec(mode)
        return spec is not None and not spec.get("native")

    def start_daemon(self, mode):
        sock = os.path.join(self.tmp, f"{mode}.sock")
        args = [self.m.baton, "daemon", "--socket", sock, "--idle-exit", "900", *self.spec(mode).get("daemon", [])]
        p = subprocess.Popen(
            args,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=self.m.log,
            preexec_fn=lambda: os.sched_setaffinity(0, REST_CPUS),
        )
        env = dict(self.env, BATON_SOCKET=sock)
        for _ in range(200):
            if p.poll() is not None:
                raise WorkerError(f"daemon of {mode} ({' '.join(args[1:])}) exited with status {p.returncode}")
            if subprocess.run([self.m.baton, "list", "--json"], env=env, capture_output=True).returncode == 0:
                self.daemons[mode] = p
                return sock
            time.sleep(0.05)
        raise WorkerError(f"the daemon of {mode} did not answer")

    def worker(self, mode, role, env):
        """A worker of ROLE (hp, be, both) in MODE."""
        spec = self.spec(mode)
        cpus = {"hp": HP_CPUS, "be": BE_CPUS, "both": (HP_CPUS or []) + (BE_CPUS or [])}[role]
        env = dict(env, MATRIX_CPUS=csv(cpus)) if cpus else dict(env)
        cmd = [sys.executable, WORKER, role]
        if mode == "native-split":
            env["MATRIX_BE_DEVICE"] = SPLIT_DEVICE
        elif spec is not None:
            key = "hp" if role == "both" else role
            env.update(spec.get(f"{key}_env", {}))
            if spec.get("native"):
                return Worker(f"{self.setup}/{mode}/{role}", cmd, env, self.m.log)
            args = spec.get(role, spec.get(key, ["--priority", "10" if key == "hp" else "0"]))
            cmd = [self.m.baton, "run", *args, "--"] + cmd
            # The interposer's own account in workers.log: its slices, and each time a stream's
            # readiness turns launch-bound or not (what decides whether a yielding job is held).
            env.setdefault("BATON_LOG", "info")
            # Its report at exit, one file per process: what each stream's suspensions found
            # in flight, among the rest (summarized into the raw file as `reports`).
            env.setdefault("BATON_REPORT", os.path.join(self.tmp, "reports", f"{mode}-{role}") + "/")
        return Worker(f"{self.setup}/{mode}/{role}", cmd, env, self.m.log)

    def start(self, env):
        modes = self.m.modes(self.setup)
        socks = self.socks = {m: self.start_daemon(m) for m in modes if self.scheduled(m)}

        def ready(w):
            info = w.read(420)
            w.info = info
            self.m.say(f"{w.name} ready (pid {info['pid']}, baton={info['baton']}, {info['gpu_mib']} MiB)")
            self.m.raw.setdefault("workers", {})[w.name] = info

        menvs = {m: dict(env, BATON_SOCKET=socks[m]) if m in socks else env for m in modes}
        for mode in modes:
            if self.setup == "P":
                w = self.worker(mode, "both", menvs[mode])
                self.workers[("hp", mode)] = self.workers[("be", mode)] = w
            else:
                self.workers[("hp", mode)] = self.worker(mode, "hp", menvs[mode])
        # The service's GPU-busy share, in a process of its own (the profiler slows the later
        # launches of the process it ran in).
        busy = self.worker("native", "hp", env)
        for w in self.unique() + [busy]:
            ready(w)
        # The jobs warm up one at a time: each mode's job has its own daemon, so nothing makes
        # the yielding jobs of several modes take turns, and warming up together they would
        # alternate their short slices (docs/benchmarks/yielders/).
        if self.setup != "P":
            for mode in modes:
                w = self.workers[("be", mode)] = self.worker(mode, "be", menvs[mode])
                ready(w)
        return busy

    def unique(self):
        return list({id(w): w for w in self.workers.values()}.values())

    def calibrate(self, busy):
        """Each service's time alone and the rate of its load; its GPU-busy share at that rate."""
        nat = self.workers[("hp", "native")]
        for kind in sorted({ALL_SERVICES[s][0] for s in self.a.services}):
            r = nat.call(300, cmd="time", hp=kind, n=5 if kind == "Dg" else 100)
            ms = b2b = analyze.median(r["ms"])
            # One request at a time after an idle gap can take longer than back to back (an
            # eager BERT on an H200: 8–18 ms against 4.7 ms, so a load computed from the
            # back-to-back time put it near or over capacity): the load is of the time a
            # request takes in open loop, probed at a fifth of the back-to-back capacity.
            # The decoder's requests are long and its gaps do not slow them.
            if kind != "Dg":
                probe = nat.call(300, cmd="serve", hp=kind, rate=200 / b2b, n=100, seed=999, cap_s=60)
                ms = max(b2b, analyze.median(probe["lat_ms"]))
            self.calib[kind] = {"request_ms": ms, "back_to_back_ms": b2b, "ms": r["ms"]}
            self.m.say(
                f"{self.setup}: {kind} alone {ms:.3f} ms a request in open loop (median; {b2b:.3f} back to back)"
            )
        for name in self.a.services:
            kind, load = ALL_SERVICES[name]
            rate = load * 1e3 / self.calib[kind]["request_ms"]
            entry = {
                "service": kind,
                "load": load,
                "rate": rate,
                "request_ms": self.calib[kind]["request_ms"],
                "back_to_back_ms": self.calib[kind]["back_to_back_ms"],
            }
            try:
                b = busy.call(300, cmd="busy", hp=kind, rate=rate, n=4 if kind == "Dg" else 200)
                entry.update(busy=b["busy"], busy_wall_s=b["wall_s"])
                self.m.say(f"{self.setup}: {name} at {rate:.1f}/s: GPU busy {b['busy']:.3f}")
            except WorkerError as e:
                entry["busy_error"] = str(e)
                self.m.say(f"{self.setup}: {name}: busy not measured: {e}")
            self.m.raw["services"].setdefault(self.setup, {})[name] = entry
        busy.close()
        self.m.save()

    def serve(self, w, name, rep):
        kind, _ = ALL_SERVICES[name]
        c = self.m.raw["services"][self.setup][name]
        n = self.a.samples
        span = n / (c["rate"] * (64 if kind == "Dg" else 1))
        st = steal_s()
        r = w.call(
            max(120, 4 * self.a.cap * span),
            cmd="serve",
            hp=kind,
            rate=c["rate"],
            n=n,
            seed=1000 * rep
            + (sorted(SERVICES).index(name) if name in SERVICES else 10 + sorted(LAB_SERVICES).index(name)),
            cap_s=self.a.cap * span,
        )
        st2 = steal_s()
        if st is not None and st2 is not None:
            r["steal_s"] = round(st2 - st, 3)
        return r

    def alone(self, rep, pinned):
        w = self.workers[("hp", "native")]
        for name in self.a.services:
            base = {"kind": "alone", "setup": self.setup, "mode": "native", "rep": rep, "hp": name, "pinned": pinned}
            try:
                r = self.serve(w, name, rep)
                self.m.record({**base, **r})
                self.m.say(
                    f"{self.setup} rep {rep} alone {name:5}: p50 {analyze.pct(r['lat_ms'], 0.5):8.3f} "
                    f"p99 {analyze.pct(r['lat_ms'], 0.99):8.3f} ms"
                )
            except WorkerError as e:
                self.m.record({**base, "error": str(e)})
                self.m.say(f"{self.setup} rep {rep} alone {name}: {e}")

    def job_alone(self, rep, pinned):
        w = self.workers[("be", "native")]
        for job in self.a.jobs:
            base = {"kind": "job_alone", "setup": self.setup, "mode": "native", "rep": rep, "be": job, "pinned": pinned}
            try:
                t = w.call(60, cmd="flood", be=job)["t_start"]
                time.sleep(JOB_ALONE_S)
                t_end = time.monotonic()
                r = w.call(120, cmd="stop")
                if "error" in r:
                    raise WorkerError(r["error"])
                rate = analyze.window_rate(r["log"], t + RAMP_S, t_end)
                self.m.record({**base, "rate": rate, "unit": r["unit"], "seconds": t_end - t - RAMP_S})
                self.m.say(f"{self.setup} rep {rep} job alone {job}: {rate:.1f} {r['unit']}/s")
            except WorkerError as e:
                self.m.record({**base, "error": str(e)})
                self.m.say(f"{self.setup} rep {rep} job alone {job}: {e}")

    def cell(self, rep, job, mode, pinned):
        """The job floods in MODE while every service runs in turn."""
        hpw, bew = self.workers[("hp", mode)], self.workers[("be", mode)]
        results, err, log = {}, None, {"log": [], "unit": None}
        trace = None
        try:
            bew.call(60, cmd="flood", be=job)
            time.sleep(RAMP_S)
            trace = self.trace(rep, job, mode, pinned)
            for name in self.a.services:
                try:
                    results[name] = self.serve(hpw, name, rep)
                except WorkerError as e:
                    results[name] = {"error": str(e)}
            log = bew.call(300, cmd="stop")
        except WorkerError as e:
            err = str(e)
        if trace is not None:
            try:
                trace.wait(timeout=60)
            except subprocess.TimeoutExpired:
                trace.kill()
                trace.wait()
            self.hold(trace, rep, job, mode, pinned)
        for name in self.a.services:
            r = results.get(name, {"error": err or "not run"})
            rec = {
                "kind": "cell",
                "setup": self.setup,
                "mode": mode,
                "rep": rep,
                "hp": name,
                "be": job,
                "pinned": pinned,
                **r,
            }
            if "error" not in r and r.get("t_first") is not None:
                win = analyze.window_progress(log["log"], r["t_first"], r["t_last"])
                rec.update(
                    be_units=win["units"],
                    be_seconds=r["t_last"] - r["t_first"],
                    be_covered=win["covered"],
                    be_unit=log["unit"],
                )
                if log.get("error"):
                    rec["error"] = "job: " + log["error"]
                self.m.say(
                    f"{self.setup} rep {rep} {mode:10} {name:5}+{job}: p50 "
                    f"{analyze.pct(r['lat_ms'], 0.5):8.3f} p99 {analyze.pct(r['lat_ms'], 0.99):8.3f} ms"
                    f"{' (' + str(r['censored']) + ' censored)' if r['censored'] else ''}; job "
                    f"{(win['units'] or 0) / max(1e-9, r['t_last'] - r['t_first']):8.1f} {log['unit']}/s"
                )
            else:
                self.m.say(f"{self.setup} rep {rep} {mode} {name}+{job}: {rec.get('error')}")
            self.m.record(rec)

    def trace(self, rep, job, mode, pinned):
        """With MATRIX_TRACE=DIR, the daemon's decisions while a Baton mode's first services run
        (`baton trace`, MATRIX_TRACE_S seconds, 4 by default) into DIR/trace-<setup>-<job>-<mode>-r<rep>.json;
        when its holds landed is then recorded (see `hold`)."""
        out = os.environ.get("MATRIX_TRACE")
        if not out or mode not in self.socks:
            return None
        os.makedirs(out, exist_ok=True)
        name = f"trace-{self.setup}-{job}-{mode}-r{rep}{'' if pinned else '-unpinned'}.json"
        seconds = os.environ.get("MATRIX_TRACE_S", "4")
        return subprocess.Popen(
            [self.m.baton, "trace", "--seconds", seconds, "--out", os.path.join(out, name)],
            env=dict(self.env, BATON_SOCKET=self.socks[mode]),
            stdout=subprocess.DEVNULL,
            stderr=self.m.log,
            preexec_fn=lambda: os.sched_setaffinity(0, REST_CPUS),
        )

    def sample_gpu(self):
        """With MATRIX_SMI=MS, nvidia-smi sampling the GPU every MS ms into OUT/smi-<setup>.csv
        until the part ends (None without MATRIX_SMI)."""
        every = os.environ.get("MATRIX_SMI")
        if not every:
            return None
        path = os.path.join(self.a.out, f"smi-{self.setup}.csv")
        with open(path, "w") as out:
            out.write(f"# CLOCK_MONOTONIC - wall clock: {time.monotonic() - time.time():.6f} s\n")
            out.flush()
            try:
                return subprocess.Popen(
                    [
                        "nvidia-smi",
                        "--query-gpu=index,timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active",
                        "--format=csv",
                        f"--loop-ms={int(every)}",
                    ],
                    stdout=out,
                    stderr=self.m.log,
                    preexec_fn=lambda: os.sched_setaffinity(0, REST_CPUS),
                )
            except OSError as e:
                raise WorkerError(f"MATRIX_SMI: nvidia-smi could not run ({e})") from e

    def list_every(self):
        """With MATRIX_LIST=SECONDS, a thread that appends every Baton mode's `baton list --used`
        to OUT/list-<setup>.txt every SECONDS; returns the event that stops it (None without
        MATRIX_LIST)."""
        every = os.environ.get("MATRIX_LIST")
        if not every or not self.socks:
            return None
        period, stop = float(every), threading.Event()
        path = os.path.join(self.a.out, f"list-{self.setup}.txt")

        def loop():
            with open(path, "a") as out:
                while not stop.wait(period):
                    for mode, sock in self.socks.items():
                        r = subprocess.run(
                            [self.m.baton, "list", "--used"],
                            env=dict(self.env, BATON_SOCKET=sock),
                            capture_output=True,
                            text=True,
                            preexec_fn=lambda: os.sched_setaffinity(0, REST_CPUS),
                        )
                        out.write(f"=== {self.m.elapsed():.1f} s {mode}\n{r.stdout}")
                        out.flush()

        threading.Thread(target=loop, daemon=True).start()
        return stop

    def hold(self, trace, rep, job, mode, pinned):
        """When the holds of the traced seconds landed (hold_lag.py), kept as a `hold` record
        and said, so that a run whose traces are too big to bring back still tells it."""
        path = trace.args[trace.args.index("--out") + 1]
        try:
            with open(path) as f:
                lag = hold_lag.analyse(json.load(f))
        except (OSError, ValueError, TypeError, AttributeError, KeyError) as e:
            lag = {"error": f"trace {path}: {e!r}"}
        self.m.record(
            {"kind": "hold", "setup": self.setup, "mode": mode, "rep": rep, "be": job, "pinned": pinned, **lag}
        )
        held = lag.get("hold_lag_us") or {}
        self.m.say(
            f"{self.setup} rep {rep} {mode} +{job} holds: {lag.get('requests', 0)} requests, lag p50 "
            f"{held.get('p50')} p99 {held.get('p99')} µs, never held {lag.get('requests_never_held')}, "
            f"job ran {lag.get('job_ran_share_of_ready')} of the ready time"
        )

    def repeat(self, rep, modes, pinned):
        # Each job first, so that every repeat measures its standalone times in the state its
        # cells run in: under MPS the services alone were 7-10 % faster in the first repeat of
        # a part (before any job had flooded) than in every later one (docs/benchmarks/matrix).
        self.job_alone(rep, pinned)
        self.alone(rep, pinned)
        for job in self.a.jobs:
            for mode in analyze.rotate(modes, rep):
                # A block that would not end within the budget is skipped, said as such.
                need = max(self.m.cell_s) if self.m.cell_s else 0
                if self.m.elapsed() + need > self.a.budget_s:
                    self.m.raw["skipped"].append(
                        {
                            "setup": self.setup,
                            "rep": rep,
                            "pinned": pinned,
                            "be": job,
                            "mode": mode,
                            "reason": f"budget: {self.m.elapsed():.0f} s spent, a block takes ~{need:.0f} s",
                        }
                    )
                    self.m.say(f"setup {self.setup}: repeat {rep} {mode}+{job} skipped (budget)")
                    continue
                t0 = time.monotonic()
                self.cell(rep, job, mode, pinned)
                self.m.cell_s.append(time.monotonic() - t0)

    def unpin(self):
        """Every worker and daemon of the part allowed on all of the part's CPUs."""
        for w in self.unique():
            repin(w.info["pid"], SLICE_CPUS)
        for p in self.daemons.values():
            repin(p.pid, SLICE_CPUS)
        repin(os.getpid(), SLICE_CPUS)

    def run(self):
        env = self.env
        if self.setup == "M":
            env = self.env = mps(self.tmp, self.env, True)
        try:
            self.m.say(f"setup {self.setup}: starting workers")
            busy = self.start(env)
            self.listing = self.list_every()
            self.smi = self.sample_gpu()
            self.calibrate(busy)
            modes = self.m.modes(self.setup)
            plan = [(r, True) for r in range(self.a.first_rep, self.a.first_rep + self.a.repeats)]
            if self.a.unpinned and self.setup in ("S", "M"):
                plan.append((self.a.first_rep + self.a.repeats, False))
            for rep, pinned in plan:
                need = min(self.m.block_s) if self.m.block_s else 0
                if self.m.elapsed() + need / 3 > self.a.budget_s:
                    self.m.raw["skipped"].append(
                        {
                            "setup": self.setup,
                            "rep": rep,
                            "pinned": pinned,
                            "reason": f"budget: {self.m.elapsed():.0f} s spent, a repeat takes ~{need:.0f} s",
                        }
                    )
                    self.m.say(f"setup {self.setup}: repeat {rep} skipped (budget)")
                    continue
                if not pinned:
                    self.unpin()
                t0 = time.monotonic()
                self.repeat(rep, modes, pinned)
                self.m.block_s.append(time.monotonic() - t0)
                self.m.say(
                    f"setup {self.setup}: repeat {rep}{'' if pinned else ' (unpinned)'} took {self.m.block_s[-1]:.0f} s"
                )
        finally:
            if getattr(self, "listing", None):
                self.listing.set()
            if getattr(self, "smi", None):
                self.smi.terminate()
                self.smi.wait()
            for w in self.unique():
                w.close()
            for p in self.daemons.values():
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
            if self.setup == "M":
                mps(self.tmp, self.env, False)
            self.collect_reports()
            self.m.save()

    def collect_reports(self):
        """The workers' exit reports (BATON_REPORT), kept in the raw file by `SETUP/MODE-ROLE`,
        and what the job's suspensions found in flight said in the log."""
        base = os.path.join(self.tmp, "reports")
        for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            summary = report_summary(os.path.join(base, name))
            self.m.raw.setdefault("reports", {})[f"{self.setup}/{name}"] = summary
            for q in summary:
                g = q.get("gemm")
                if g:
                    verdicts = ", ".join(
                        f"{s['m']}x{s['n']}x{s['k']} {s['verdict']} {s['pieces']} ({s['whole_us']:.0f}/{s['split_us']:.0f} µs)"
                        for s in g.get("shapes", [])
                    )
                    self.m.say(
                        f"{self.setup}/{name}: {g['calls']} GEMMs, {g['split_calls']} split into "
                        f"{g['pieces']} pieces; checked: {verdicts}"
                    )
                at = q.get("inflight_at_suspend")
                if at:
                    self.m.say(
                        f"{self.setup}/{name} {q['stream']}: {at['suspensions']} suspensions "
                        f"({at['unmeasured']} unmeasured, {at['budgeted']} budgeted) found "
                        f"{at['mean_commands']:.1f} commands in flight on average "
                        f"({at['mean_us']:.0f} µs), at most {at['max_commands']} ({at['max_us']:.0f} µs)"
                    )


def report_summary(folder):
    """From the interposer's reports in FOLDER (one per process), each queue that took
    commands: its stream, priority, commands, sync points, commands released while suspended and
    what its suspensions found in flight; and each process's cuBLAS GEMMs that went through
    Baton (`gemm`: calls, how many were split and into how many pieces, the checked shapes)."""
    keep = ("stream", "priority", "commands", "sync_points", "released_while_suspended", "inflight_at_suspend")
    out = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(folder, name)) as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            out.append({"file": name, "error": str(e)})
            continue
        for q in report.get("queues") or []:
            out.append({"file": name, **{k: q[k] for k in keep if k in q}})
        if (report.get("gemm") or {}).get("calls"):
            out.append({"file": name, "gemm": report["gemm"]})
    return out


class Matrix:
    def __init__(self, a):
        self.a = a
        self.baton = os.path.abspath(os.environ.get("BATON_BIN") or os.path.join(ROOT, "target", "release", "baton"))
        self.log = open(os.path.join(a.out, "workers.log"), "a")
        self.t0 = time.monotonic()
        self.block_s, self.cell_s = [], []
        self.raw = {
            "schema": "baton.matrix-raw/2",
            "machine": machine(),
            "commit": commit(),
            "args": vars(a),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "modes": {m: BATON_MODES.get(m) or EXTRA_MODES.get(m) for m in a.modes or []},
            "services": {},
            "records": [],
            "skipped": [],
            "notes": [],
            "cpus": {"hp": HP_CPUS, "be": BE_CPUS, "rest": REST_CPUS, "slice": SLICE_CPUS},
            "gpu": os.environ.get("CUDA_VISIBLE_DEVICES"),
        }
        tail = f"-r{a.first_rep}" if a.first_rep else ""
        self.raw_path = os.path.join(a.out, f"raw-{''.join(a.setups)}-{''.join(a.jobs)}{tail}.json")

    def modes(self, setup):
        if self.a.modes is None:
            return list(MODES[setup])
        allowed = MODES[setup] + [m for m in EXTRA_MODES if setup != "P"]
        return [m for m in self.a.modes if m in allowed]

    def elapsed(self):
        return time.monotonic() - self.t0

    def say(self, msg):
        print(f"[{self.elapsed():6.1f} s] {msg}", flush=True)

    def save(self):
        self.raw["elapsed_s"] = round(self.elapsed(), 1)
        tmp = self.raw_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.raw, f)
        os.replace(tmp, self.raw_path)

    def record(self, rec):
        self.raw["records"].append(rec)
        self.save()


def visible_gpus():
    """How many GPUs this process's CUDA sees: CUDA_VISIBLE_DEVICES's entries where it is set,
    else as many as nvidia-smi lists (None: neither says)."""
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        return len([d for d in vis.split(",") if d.strip()])
    return gpu_count() or None


def split_device_missing():
    """Why P's native-split cannot run here (its job on SPLIT_DEVICE, a GPU beside the
    service's), or None when it can or the GPUs cannot be counted."""
    n, dev = visible_gpus(), SPLIT_DEVICE
    index = dev.split(":", 1)[1] if dev.startswith("cuda:") else None
    if n is None or index is None or not index.isdigit() or int(index) < n:
        return None
    return (
        f"P's native-split runs the job on {dev}, but this process sees {n} GPU(s): make a second "
        "one visible (CUDA_VISIBLE_DEVICES; side_by_side.py --gpus-per-part 2), set "
        "MATRIX_SPLIT_DEVICE, or name --modes without native-split"
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--setups", default="S,M,P")
    p.add_argument("--services", default=",".join(SERVICES))
    p.add_argument("--jobs", default=",".join(JOBS))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--first-rep",
        type=int,
        default=0,
        help="number the repeats from here (the mode order and the arrival seeds follow it)",
    )
    p.add_argument("--samples", type=int, default=1000, help="latency samples per measurement (Dg: tokens)")
    p.add_argument(
        "--cap",
        type=float,
        default=1.5,
        help="stop starting requests past this many times a measurement's planned span",
    )
    p.add_argument("--unpinned", action="store_true", help="one more repeat of S and M with nothing pinned")
    p.add_argument("--modes", default=None, help="only these modes, in this order (native among them)")
    p.add_argument(
        "--budget-s",
        type=float,
        default=560,
        help="no repeat starts that would not end within this many seconds of the start",
    )
    a = p.parse_args(argv)
    a.setups = [s for s in a.setups.split(",") if s]
    a.services = [s for s in a.services.split(",") if s]
    a.jobs = [j for j in a.jobs.split(",") if j]
    a.modes = a.modes.split(",") if a.modes else None
    bad = (
        [s for s in a.setups if s not in MODES]
        + [s for s in a.services if s not in ALL_SERVICES]
        + [j for j in a.jobs if j not in JOBS + LAB_JOBS]
        + [m for m in a.modes or [] if m not in MODES["P"] and m not in BATON_MODES and m not in EXTRA_MODES]
    )
    if bad:
        p.error(f"unknown setup, service, job or mode: {', '.join(bad)}")
    if a.modes is not None and "native" not in a.modes:
        p.error("--modes must include native: every ratio is against it")
    split = "P" in a.setups and "native-split" in (a.modes if a.modes is not None else MODES["P"])
    if split and (need := split_device_missing()):
        p.error(need)
    os.makedirs(a.out, exist_ok=True)
    os.sched_setaffinity(0, REST_CPUS)
    m = Matrix(a)
    if not os.access(m.baton, os.X_OK):
        p.error(f"no baton executable at {m.baton} (set BATON_BIN)")
    m.say(
        f"machine: {m.raw['machine']}; commit {m.raw['commit']}; setups {a.setups}, services "
        f"{a.services}, jobs {a.jobs}, {a.repeats} repeat(s){' + unpinned' if a.unpinned else ''}"
    )
    aborted = []
    for setup in a.setups:
        try:
            Part(m, setup).run()
        except Exception as e:  # noqa: BLE001 (the other setups still run; the raw file says why)
            aborted.append(setup)
            m.raw["notes"].append(f"setup {setup} aborted: {e!r}")
            m.say(f"setup {setup} aborted: {e!r}")
            m.save()
    m.say("done; analysing")
    analyze.main([a.out])
    if aborted:
        sys.exit(f"setup(s) aborted: {', '.join(aborted)} (the console and the raw file's notes say why)")


if __name__ == "__main__":
    main()
