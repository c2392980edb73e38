#!/usr/bin/env python3
"""The co-location matrix: does Baton keep the service at its standalone latency AND give the
best-effort job what the service leaves? One command on the GPU machine:

  matrix.py --out DIR [--quick] [--setups S,M,P] [--repeats 3] [--budget-s 570]

HP services (closed loop, think time between requests): R ResNet-50 b8, B BERT-base b1,
D a GPT-2-medium-shaped decoder (32 tokens through `generate`). BE floods: G bf16 GEMMs,
T ResNet-50 training. Setups: S separate processes (time-slicing), M separate processes
under MPS (started and stopped here), P one process with HP on a high-priority stream.
Modes: native; baton (`baton run --priority 10` / `--priority 0`, `--local` in P; in M the
default gives way by SMs, as baton-yield); baton-l3 (BE at `--level 3`, S only). Only when
--modes names them: baton-yield (BE at `--priority 0 --yield`: never held back for HP; in S its
context's time slice short instead, in M its kernels on 85 % of the SMs while HP's process
exists; S and M), baton-hold (BE at `--priority 0 --hold`: held back whenever HP has work, as
the default was in M before, and in S beside a launch-bound service before Hint::TimeSliced;
S and M),
baton-w2 (BE at `--priority 0 --threshold 2 --batch 1`: held as by default, with two commands
in flight instead of sixteen; S), baton-unmeasured (BE with `BATON_COMMAND_TIME=off`: its
command time never told, so held back whenever HP has work even when its commands are short,
as before command times were measured; S and M), baton-w256 (BE at `--priority 0 --threshold
256 --batch 32`: as by default, with a window of 256 commands and a sync point every 32; S
and M),
baton-low (as baton, BE's process an MPS client of below-normal priority,
CUDA_MPS_CLIENT_PRIORITY=1: the service's thread blocks are dispatched first; M),
baton-sms (BE on part of the SMs, nothing held; M and P), baton-reserve (BE at `--priority 0
--sms`, isolated under MPS; M) and baton-block (as baton, with BATON_MAX_BUFFERED=1: a thread
launching into a held stream waits instead of running ahead, so a held training thread stops
contending for the interpreter lock and the CPU; P) and native-split (P, the control for sharing a
process: natively, the job's thread in the service's process with its work on a second GPU,
MATRIX_SPLIT_DEVICE or cuda:1, so the two share the interpreter, the CPUs and the runtime and
not the GPU; needs two GPUs visible).

Method (see docs/benchmarks/matrix/README.md): the workers (workers.py) are started once per
setup and stay warm, so model loading is never timed; every repeat measures HP alone (native,
and under Baton where the setup lists it) and BE alone again, then each (BE, mode) block: BE
floods, the three services run back to back, BE stops. Modes rotate from repeat to repeat, so
native and Baton alternate. BE progress is counted inside each service's window (its first
to its last timed request). With --phases K, R and B are instead measured as K alternating
phases, HP alone then co-located, each with its own alone baseline (against the VM's drifting
CPU speed). Writes DIR/raw-<setups>-<jobs>.json (every request's latency, rewritten
after every measurement so that a cut-off run keeps what it measured), then the analysis
(analyze.py) of every raw file in DIR.
"""
import argparse, importlib.metadata, json, os, platform, select, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
import analyze  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "apps"))
from mps import mps  # noqa: E402

# How long BE floods before a service's window opens (its first steps fill the pipeline).
RAMP_S = 0.5
# How long a paused flood runs again before a co-located phase opens (no restart to ramp).
PHASE_RAMP_S = 0.25
MODES = {"S": ["native", "baton", "baton-l3"], "M": ["native", "baton"], "P": ["native", "baton"]}
# Modes run only when --modes names them: baton-sms (BE's kernels on part of the SMs through
# `--sms`, never held: the spatial reservation alone, where HP and BE overlap); baton-reserve
# (MPS only: BE at `--priority 0 --sms`, under the daemon, which sees it isolated and does not
# hold it for HP).
EXTRA_MODES = {"S": ["baton-yield", "baton-w2", "baton-unmeasured", "baton-w256", "baton-hold",
                     "baton-hp", "baton-be"],
               "M": ["baton-sms", "baton-reserve", "baton-unmeasured", "baton-w256", "baton-yield",
                     "baton-hold", "baton-low", "baton-hp", "baton-be"],
               "P": ["baton-sms", "baton-block", "native-split"]}
# Modes whose BE runs beside baton's HP process (they share it).
SHARED_HP = ("baton-l3", "baton-yield", "baton-w2", "baton-sms", "baton-reserve", "baton-unmeasured",
             "baton-w256", "baton-hold", "baton-low")
# Modes with one role under `baton run` and the other native: that role's native worker serves
# them (the role under Baton has a worker of its own).
ONE_SIDED = {"baton-hp": "be", "baton-be": "hp"}
# Where native-split puts the job's work: a second GPU of the same machine.
SPLIT_DEVICE = os.environ.get("MATRIX_SPLIT_DEVICE", "cuda:1")
# SMs left to BE in baton-sms (of 132 on an H100).
BE_SMS = os.environ.get("MATRIX_BE_SMS", "112")
# Where HP alone is also measured under Baton (Baton's own cost, interleaved with native): in S.
# Elsewhere HP alone is measured natively only (the baseline), which keeps each setup's run
# inside one device call.
ALONE_MODES = {"S": ["native", "baton"], "M": ["native"], "P": ["native"]}


def parse_cpu_list(text):
    """A kernel CPU list ("0-3,8,10-11") as a sorted list of CPUs."""
    out = set()
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
    return sorted(out)


def cpu_siblings(n):
    """Each CPU's hardware threads (its physical core's CPUs, itself included), as the kernel
    lists them; a CPU alone where the kernel does not say."""
    out = {}
    for c in range(n):
        try:
            with open(f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list") as f:
                out[c] = [x for x in parse_cpu_list(f.read()) if x < n] or [c]
        except (OSError, ValueError):
            out[c] = [c]
    return out


def cores(cpus, siblings):
    """CPUS as physical cores: one list of CPUs a core, cores in the order of their first CPU."""
    seen, out = set(), []
    for c in sorted(cpus):
        if c in seen:
            continue
        core = [x for x in siblings.get(c, [c]) if x in cpus] or [c]
        seen.update(core)
        out.append(core)
    return out


def machine_slice(n=None, spec=None, siblings=None):
    """The CPUs this run may use: all of the machine's, or with MATRIX_SLICE=K/N (runs side by
    side on one machine, one GPU each: side_by_side.py) the K-th of N equal parts of its
    physical cores, every hardware thread of a core in the same part, so that no two parts
    share a core (all of them where the machine has fewer cores than parts: nothing is pinned
    there anyway). Without SMT a part is N-th of the CPUs in order."""
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
    return sorted(c for core in cs[k * size:(k + 1) * size] for c in core)


def cpu_sets(cpus, siblings=None):
    """HP's and BE's cores: the upper half of CPUS's physical cores, a quarter each, away from
    the first CPU (where interrupts land) and from the daemon, so that HP and BE never share a
    core; none when CPUS are fewer than 8."""
    if len(cpus) < 8:
        return None, None, None
    cs = cores(cpus, siblings or cpu_siblings(max(cpus) + 1))
    m = len(cs)

    def flat(group):
        return ",".join(str(c) for core in group for c in core)
    hp, be = flat(cs[m // 2:m // 2 + m // 4]), flat(cs[m // 2 + m // 4:])
    return hp, be, f"{hp},{be}"


def rest_cpus(cpus, both):
    """The slice's CPUs that are neither HP's nor BE's (BOTH: their list), where this script,
    the daemon `baton run` starts, the MPS control daemon and the launchers run: away from
    the roles' cores and inside the slice. All of CPUS when nothing is pinned."""
    if not both:
        return list(cpus)
    taken = {int(c) for c in both.split(",")}
    return [c for c in cpus if c not in taken] or list(cpus)


SLICE_CPUS = machine_slice()
HP_CPUS, BE_CPUS, BOTH_CPUS = cpu_sets(SLICE_CPUS)
REST_CPUS = rest_cpus(SLICE_CPUS, BOTH_CPUS)
BE_ALONE_S = float(os.environ.get("MATRIX_BE_ALONE_S", "2.5"))
# The worker program; the self-test puts a stand-in without a GPU here.
WORKER = os.environ.get("MATRIX_WORKER") or os.path.join(HERE, "workers.py")


class WorkerError(Exception):
    pass


class Worker:
    """One workers.py process: a JSON line per command, a JSON line per answer."""

    def __init__(self, name, cmd, env, log):
        self.name = name
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                  env=env, text=True, bufsize=1, cwd=ROOT)
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

    def ready(self, timeout):
        self.info = self.read(timeout)
        return self.info

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


def steal_s():
    """CPU time the hypervisor gave to others (all CPUs, seconds): a noise source on shared VMs."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def with_cpus(env, cpus):
    return dict(env, MATRIX_CPUS=cpus) if cpus else env


def machine():
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,power.limit",
                              "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    except OSError:
        smi = "no nvidia-smi"

    def version(pkg):
        try:
            return importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            return None
    n = os.cpu_count() or 1
    siblings = cpu_siblings(n)
    return {"gpu": smi, "kernel": platform.release(), "cpus": os.cpu_count(),
            "threads_per_core": max(len(v) for v in siblings.values()),
            "cores": len(cores(range(n), siblings)),
            "python": platform.python_version(), "torch": version("torch"),
            "transformers": version("transformers")}


class Matrix:
    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="baton-matrix.")
        self.baton = os.path.abspath(os.environ.get("BATON_BIN") or os.path.join(ROOT, "target", "release", "baton"))
        self.env = dict(os.environ, BATON_SOCKET=os.path.join(self.tmp, "baton.sock"), PYTHONUNBUFFERED="1",
                        TOKENIZERS_PARALLELISM="false", TRANSFORMERS_VERBOSITY="error")
        self.log = open(os.path.join(a.out, "workers.log"), "a")
        self.t0 = time.monotonic()
        self.raw = {"schema": "baton.matrix-raw/1", "machine": machine(),
                    "commit": os.environ.get("BATON_COMMIT", "unknown"), "args": vars(a),
                    "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "busy": {}, "records": [], "skipped": [], "notes": [],
                    "cpus": {"hp": HP_CPUS, "be": BE_CPUS, "both": BOTH_CPUS, "rest": REST_CPUS},
                    "slice": {"spec": os.environ.get("MATRIX_SLICE"), "cpus": SLICE_CPUS,
                              "gpu": os.environ.get("CUDA_VISIBLE_DEVICES")}}
        tail = f"-r{a.first_rep}" if a.first_rep else ""
        self.raw_path = os.path.join(a.out, f"raw-{''.join(a.setups)}-{''.join(a.bes)}{tail}.json")
        self.block_s = []

    def elapsed(self):
        return time.monotonic() - self.t0

    def start_stallwatch(self):
        """stallwatch.c on every CPU for the whole run: the moments a virtual CPU was off its host
        CPU, so that the analysis can tell which requests a stall of the VM hit."""
        exe, self.watch_out = os.path.join(self.tmp, "stallwatch"), os.path.join(self.tmp, "stallwatch.json")
        self.watch = None
        try:
            subprocess.run(["gcc", "-O2", "-pthread", "-o", exe, os.path.join(HERE, "stallwatch.c")],
                           check=True, capture_output=True, text=True)
            # Gaps from 5 ms are kept; analyze.py drops those under 12 ms when the watcher could not
            # run real-time (a spinning thread then delays it by a scheduler slice, ~6 ms).
            # It watches the CPUs it may run on: this run's slice.
            self.watch = subprocess.Popen([exe, self.watch_out, "1000", "5000"], stderr=self.log,
                                          preexec_fn=lambda: os.sched_setaffinity(0, SLICE_CPUS))
        except (OSError, subprocess.CalledProcessError) as e:
            self.raw["notes"].append(f"stallwatch not run: {e}")

    def stop_stallwatch(self):
        if self.watch is None:
            return
        self.watch.terminate()
        try:
            self.watch.wait(timeout=10)
            with open(self.watch_out) as f:
                self.raw["stallwatch"] = json.load(f)
            gaps = self.raw["stallwatch"]["gaps"]
            self.say(f"stallwatch: {len(gaps)} gaps of a CPU over 5 ms "
                     f"(fifo {self.raw['stallwatch']['fifo']}; longest "
                     f"{max((g[2] - g[1] for g in gaps), default=0) * 1e3:.1f} ms)")
        except (OSError, ValueError, subprocess.TimeoutExpired) as e:
            self.raw["notes"].append(f"stallwatch lost: {e}")
        self.save()

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

    # --- processes -------------------------------------------------------------------------

    def wrapper(self, setup, mode, role):
        if mode in ("native", "native-split") or ONE_SIDED.get(mode) == role:
            return []
        pol = ["--policy", self.a.policy] if self.a.policy else []
        if mode == "baton-sms":
            # Nothing held (no scheduler); BE's normal-priority streams on BE_SMS SMs.
            prio = [] if setup == "P" else ["--priority", "0"]
            return ["env", "BATON_SCHEDULER=app", self.baton, "run", *prio, "--sms", self.a.be_sms, "--"]
        if mode == "baton-reserve" and role == "be":
            return [self.baton, "run", *pol, "--priority", "0", "--sms", self.a.be_sms, "--"]
        if setup == "P":
            block = ["env", "BATON_MAX_BUFFERED=1"] if mode == "baton-block" else []
            return [*block, self.baton, "run", "--local", *pol, "--"]
        prio = ["--priority", "10" if role == "hp" else "0"]
        if mode == "baton-low" and role == "be":
            return ["env", "CUDA_MPS_CLIENT_PRIORITY=1", self.baton, "run", *prio, "--"]
        if mode == "baton-unmeasured" and role == "be":
            return ["env", "BATON_COMMAND_TIME=off", self.baton, "run", *prio, "--"]
        lvl = ["--level", "3"] if (mode == "baton-l3" and role == "be") else []
        lvl += ["--yield"] if (mode == "baton-yield" and role == "be") else []
        lvl += ["--hold"] if (mode == "baton-hold" and role == "be") else []
        lvl += ["--threshold", "2", "--batch", "1"] if (mode == "baton-w2" and role == "be") else []
        lvl += ["--threshold", "256", "--batch", "32"] if (mode == "baton-w256" and role == "be") else []
        return [self.baton, "run", *prio, *lvl, "--"]

    def start(self, setup, env):
        """The setup's warm workers: {(role, mode): Worker}; in P one worker plays both roles."""
        me = [sys.executable, WORKER]
        ws = {}

        def worker(mode, role):
            return Worker(f"{setup}/{mode}/{role}", self.wrapper(setup, mode, role) + me + [role],
                          with_cpus(env, HP_CPUS if role == "hp" else BE_CPUS), self.log)
        for mode in self.modes(setup):
            if setup == "P":
                penv = dict(env, MATRIX_BE_DEVICE=SPLIT_DEVICE) if mode == "native-split" else env
                w = Worker(f"P/{mode}", self.wrapper(setup, mode, "hp") + me + ["both"],
                           with_cpus(penv, BOTH_CPUS), self.log)
                ws[("hp", mode)] = ws[("be", mode)] = w
                continue
            if mode in ONE_SIDED:
                native = ONE_SIDED[mode]
                ws[(native, mode)] = ws[(native, "native")]
                baton = "be" if native == "hp" else "hp"
                ws[(baton, mode)] = worker(mode, baton)
                continue
            if mode not in SHARED_HP:
                ws[("hp", mode)] = worker(mode, "hp")
            ws[("be", mode)] = worker(mode, "be")
        for extra in SHARED_HP:
            if ("be", extra) in ws and setup != "P":
                ws[("hp", extra)] = ws[("hp", "baton")]
        if not self.raw["busy"]:
            # HP's GPU-busy share is measured in a process of its own, closed afterwards: the
            # profiler's CUDA activity tracing slows every later launch of the process it ran in.
            ws[("busy", "native")] = Worker("busy", me + ["hp" if setup != "P" else "both"],
                                            with_cpus(env, HP_CPUS if setup != "P" else BOTH_CPUS), self.log)
        for w in {id(w): w for w in ws.values() if w}.values():
            info = w.ready(300)
            self.say(f"{w.name} ready (pid {info['pid']}, baton={info['baton']})")
            # Which process each exit report (BATON_REPORT=DIR/reports/) belongs to.
            self.raw.setdefault("workers", {})[w.name] = {"pid": info["pid"], "baton": info["baton"]}
        self.save()
        return ws

    def modes(self, setup):
        if self.a.modes is None:
            return list(MODES[setup])
        return [m for m in MODES[setup] + EXTRA_MODES[setup] if m in self.a.modes]

    def start_daemon(self, env):
        """A daemon running --policy, which `baton run` then finds instead of starting one."""
        subprocess.Popen([self.baton, "daemon", "--policy", self.a.policy, "--idle-exit", "600"], env=env,
                         stdout=subprocess.DEVNULL, stderr=self.log)
        for _ in range(200):
            if subprocess.run([self.baton, "list", "--json"], env=env, capture_output=True).returncode == 0:
                return
            time.sleep(0.05)
        raise WorkerError(f"baton daemon --policy {self.a.policy} did not answer")

    def stop_daemon(self):
        subprocess.run([self.baton, "daemon", "--stop"], env=self.env, capture_output=True)

    def mps(self, on):
        return mps(self.tmp, self.env, on)

    # --- measurements ----------------------------------------------------------------------

    def n_of(self, hp):
        return {"R": self.a.n_r, "B": self.a.n_b, "D": self.a.n_d}[hp]

    def serve(self, w, hp):
        st = steal_s()
        r = w.call(600, cmd="hp", hp=hp, n=self.n_of(hp), warmup=2 if hp == "D" else 10, think_mode=self.a.think)
        st2 = steal_s()
        if st is not None and st2 is not None:
            r["steal_s"] = round(st2 - st, 3)
        return r

    def measure_busy(self, w):
        try:
            self._measure_busy(w)
        finally:
            w.close()

    def _measure_busy(self, w):
        for hp in self.a.hps:
            try:
                r = w.call(300, cmd="busy", hp=hp, n=4 if hp == "D" else 60, think_mode=self.a.think)
                self.raw["busy"][hp] = r
                self.say(f"busy {hp}: {r['busy']:.3f} ({r['kernel_s']:.3f} s of {r['wall_s']:.3f} s)")
            except WorkerError as e:
                self.raw["notes"].append(f"busy {hp}: {e}")
                self.say(f"busy {hp}: failed: {e}")
        self.save()

    def alone(self, setup, mode, rep, w):
        for hp in self.a.hps:
            base = {"kind": "alone", "setup": setup, "mode": mode, "rep": rep, "hp": hp, "n": self.n_of(hp)}
            try:
                r = self.serve(w, hp)
                self.record({**base, **r})
                self.say(f"{setup} rep {rep} alone {mode:8} {hp}: p50 {analyze.pct(r['lat_ms'], .5):8.3f} "
                         f"p99 {analyze.pct(r['lat_ms'], .99):8.3f} ms")
            except WorkerError as e:
                self.record({**base, "error": str(e)})
                self.say(f"{setup} rep {rep} alone {mode} {hp}: {e}")

    def be_alone(self, setup, rep, w):
        for be in self.a.bes:
            base = {"kind": "be_alone", "setup": setup, "mode": "native", "rep": rep, "be": be}
            try:
                t = w.call(60, cmd="flood", be=be)["t_start"]
                time.sleep(BE_ALONE_S)
                t_end = time.monotonic()
                r = w.call(120, cmd="stop")
                if "error" in r:
                    raise WorkerError(r["error"])
                ramp = min(0.5, BE_ALONE_S / 4)   # the first steps fill the pipeline
                rate = analyze.steady_rate(r["log"], t + ramp, t_end)
                self.record({**base, "rate": rate, "unit": r["unit"], "seconds": t_end - t - ramp})
                self.say(f"{setup} rep {rep} BE alone {be}: {rate:.1f} {r['unit']}/s")
            except WorkerError as e:
                self.record({**base, "error": str(e)})
                self.say(f"{setup} rep {rep} BE alone {be}: {e}")

    def paired(self, setup, mode, rep, be, hp, hpw, bew, natw):
        """HP alone (natively) and co-located in alternating phases of n / --phases requests,
        BE flooding only in the co-located ones, so that both sides of the ratio see the same
        moments of a machine whose speed drifts; recorded as a co-located measurement and its
        own alone baseline (kind `alone_paired`). With --phase-by pause (the default) BE floods
        once and is paused (launches stop, its work drains) for every alone phase; with
        `restart` it is stopped and started again, which a training job does not survive."""
        k, by = self.a.phases, self.a.phase_by
        per = max(1, self.n_of(hp) // k)
        alone, co, windows, err, log = [], [], [], None, None
        alone_t0, co_t0 = [], []
        try:
            if by == "pause":
                bew.call(60, cmd="flood", be=be)
                bew.call(180, cmd="pause")
            for _ in range(k):
                a = natw.call(600, cmd="hp", hp=hp, n=per, warmup=2, think_mode=self.a.think)
                alone += a["lat_ms"]
                alone_t0 += a.get("t0_s", [])
                bew.call(60, cmd="flood" if by == "restart" else "resume", be=be)
                # As in a whole co-located measurement: BE's first steps fill its pipeline.
                time.sleep(RAMP_S if by == "restart" else PHASE_RAMP_S)
                c = hpw.call(600, cmd="hp", hp=hp, n=per, warmup=2, think_mode=self.a.think)
                co += c["lat_ms"]
                co_t0 += c.get("t0_s", [])
                windows.append((c["t_first"], c["t_last"]))
                if by == "restart":
                    log = self.phase_stop(bew, log)
                else:
                    bew.call(180, cmd="pause")
            if by == "pause":
                log = self.phase_stop(bew, log)
        except WorkerError as e:
            err = str(e)
            if log is None:
                try:
                    self.phase_stop(bew, None)
                except WorkerError:
                    pass
        base = {"setup": setup, "mode": mode, "rep": rep, "hp": hp, "be": be, "n": per * k, "phases": k,
                "phase_by": by}
        self.record({**base, "kind": "alone_paired", "lat_ms": alone, "t0_s": alone_t0,
                     **({"error": err} if err else {})})
        rec = {**base, "kind": "coloc", "lat_ms": co, "t0_s": co_t0,
               "t_first": windows[0][0] if windows else None, "t_last": windows[-1][1] if windows else None}
        if not err:
            units, secs, covered = 0.0, 0.0, True
            for t0, t1 in windows:
                w = analyze.window_progress(log["log"], t0, t1)
                covered = covered and w["covered"]
                units += w["units"] or 0.0
                secs += t1 - t0
            rec.update(be_units=units, be_rate=units / secs if secs > 0 else None, be_covered=covered,
                       be_unit=log["unit"])
            self.say(f"{setup} rep {rep} {mode:8} {hp}+{be}: p99 {analyze.pct(co, .99):8.3f} ms against "
                     f"{analyze.pct(alone, .99):8.3f} alone, in {k} phases; BE {rec['be_rate'] or 0:8.1f} "
                     f"{log['unit']}/s{'' if covered else ' (BE did not cover the window)'}")
        else:
            rec["error"] = err
            self.say(f"{setup} rep {rep} {mode} {hp}+{be} (phased): {err}")
        self.record(rec)

    @staticmethod
    def phase_stop(bew, log):
        """Stops the flood and joins its log to LOG (one per phase when restarting)."""
        r = bew.call(180, cmd="stop")
        if r.get("error"):
            raise WorkerError("BE: " + r["error"])
        if log is None:
            return r
        return {"log": log["log"] + r["log"], "unit": r["unit"]}

    def coloc(self, setup, mode, rep, be, hpw, bew, natw):
        phased = [h for h in self.a.hps if self.a.phases > 1 and h in self.a.phased and be in self.a.phased_bes]
        for hp in phased:
            self.paired(setup, mode, rep, be, hp, hpw, bew, natw)
        rest = [h for h in self.a.hps if h not in phased]
        if not rest:
            return
        results, err = {}, None
        try:
            bew.call(60, cmd="flood", be=be)
            time.sleep(RAMP_S)
            for hp in rest:
                try:
                    results[hp] = self.serve(hpw, hp)
                except WorkerError as e:
                    results[hp] = {"error": str(e)}
            log = bew.call(180, cmd="stop")
        except WorkerError as e:
            err, log = str(e), {"log": [], "unit": None}
        for hp in rest:
            r = results.get(hp, {"error": err or "not run"})
            rec = {"kind": "coloc", "setup": setup, "mode": mode, "rep": rep, "hp": hp, "be": be,
                   "n": self.n_of(hp), **r}
            if "error" not in r:
                w = analyze.window_progress(log["log"], r["t_first"], r["t_last"])
                rec.update(be_units=w["units"], be_rate=w["rate"], be_covered=w["covered"], be_unit=log["unit"])
                if log.get("error"):
                    rec["error"] = "BE: " + log["error"]
                self.say(f"{setup} rep {rep} {mode:8} {hp}+{be}: p50 {analyze.pct(r['lat_ms'], .5):8.3f} "
                         f"p99 {analyze.pct(r['lat_ms'], .99):8.3f} ms; BE {w['rate'] or 0:8.1f} "
                         f"{log['unit']}/s{'' if w['covered'] else ' (BE did not cover the window)'}")
            else:
                self.say(f"{setup} rep {rep} {mode} {hp}+{be}: {r['error']}")
            self.record(rec)
        # The BE's timeline, thinned to ~20 points a second, for pictures and checks.
        self.raw.setdefault("be_logs", []).append(
            {"setup": setup, "mode": mode, "rep": rep, "be": be, "unit": log["unit"],
             "log": analyze.thin(log["log"], 0.05)})

    # --- the run ---------------------------------------------------------------------------

    def run_setup(self, setup):
        env = self.env
        if setup == "M":
            env = self.mps(True)
        ws = {}
        try:
            self.say(f"setup {setup}: starting workers")
            if self.a.policy and setup != "P":
                self.start_daemon(env)
            ws = self.start(setup, env)
            if ("busy", "native") in ws:
                self.measure_busy(ws.pop(("busy", "native")))
            modes = self.modes(setup)
            for rep in range(self.a.first_rep, self.a.first_rep + self.a.repeats):
                t_block = time.monotonic()
                need = max(self.block_s) if self.block_s else 0
                if self.elapsed() + need > self.a.budget_s:
                    self.raw["skipped"].append({"setup": setup, "rep": rep,
                                                "reason": f"budget: {self.elapsed():.0f} s spent, a repeat takes ~{need:.0f} s"})
                    self.say(f"setup {setup}: repeat {rep} skipped (budget)")
                    self.save()
                    continue
                for mode in analyze.rotate([m for m in ALONE_MODES[setup] if m in modes], rep):
                    self.alone(setup, mode, rep, ws[("hp", mode)])
                self.be_alone(setup, rep, ws[("be", "native")])
                for be in self.a.bes:
                    for mode in analyze.rotate(modes, rep):
                        self.coloc(setup, mode, rep, be, ws[("hp", mode)], ws[("be", mode)], ws[("hp", "native")])
                self.block_s.append(time.monotonic() - t_block)
                self.say(f"setup {setup}: repeat {rep} took {self.block_s[-1]:.0f} s")
        finally:
            for w in {id(w): w for w in ws.values() if w}.values():
                w.close()
            self.stop_daemon()
            if setup == "M":
                self.mps(False)
            self.save()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--quick", action="store_true", help="one repeat, R and D only")
    p.add_argument("--setups", default="S,M,P")
    p.add_argument("--hps", default=None, help="default R,B,D (quick: R,D)")
    p.add_argument("--bes", default="G,T")
    p.add_argument("--repeats", type=int, default=None, help="default 3 (quick: 1)")
    p.add_argument("--first-rep", type=int, default=0,
                   help="number the repeats from here (their mode order rotates by it): more repeats "
                        "of a setup in another run, merged by analyze.py")
    p.add_argument("--n-r", type=int, default=300)
    p.add_argument("--n-b", type=int, default=300)
    p.add_argument("--n-d", type=int, default=30)
    p.add_argument("--think", default="hybrid", choices=["hybrid", "spin", "sleep"],
                   help="how HP spends its think time (workers.py): hybrid, asleep but awake for its last "
                        "millisecond (the committed matrix's method); spin, awake throughout; sleep")
    p.add_argument("--phases", type=int, default=1,
                   help="measure the services in --phased as alternating alone/co-located phases of "
                        "n/PHASES requests each (1: the committed matrix's method, alone once per repeat)")
    p.add_argument("--phased", default="R,B", help="the services --phases applies to")
    p.add_argument("--phased-bes", default="G,T", help="the jobs --phases applies to")
    p.add_argument("--phase-by", default="pause", choices=["pause", "restart"],
                   help="how BE leaves the alone phases: pause (it stops launching and drains, then "
                        "goes on: no restart) or restart (stopped and started again each phase: the "
                        "guard/ runs' method; a training job makes little progress for seconds after a "
                        "start, so use --phased-bes G with it)")
    p.add_argument("--policy", default=None,
                   help="the policy Baton's modes run (default: Baton's default policy)")
    p.add_argument("--modes", default=None,
                   help="only these modes (default: every mode of each setup: native, baton, and baton-l3 in S)")
    p.add_argument("--be-sms", default=BE_SMS,
                   help="SMs left to BE in baton-sms and baton-reserve (default $MATRIX_BE_SMS or 112)")
    p.add_argument("--alone-modes", default=None,
                   help="the modes HP alone is measured in, every setup (default: native and baton in S, "
                        "native elsewhere); baton in M or P gives Baton's own cost there")
    p.add_argument("--budget-s", type=float, default=570,
                   help="no repeat starts that would not end within this many seconds of the start")
    a = p.parse_args()
    a.setups = [s for s in a.setups.split(",") if s]
    a.hps = (a.hps or ("R,D" if a.quick else "R,B,D")).split(",")
    a.bes = a.bes.split(",")
    a.repeats = a.repeats or (1 if a.quick else 3)
    a.phased = a.phased.split(",")
    a.phased_bes = a.phased_bes.split(",")
    a.modes = a.modes.split(",") if a.modes else None
    if a.alone_modes:
        for setup in ALONE_MODES:
            ALONE_MODES[setup] = a.alone_modes.split(",")
    if a.modes is not None and "native" not in a.modes:
        p.error("--modes must include native: every ratio is against it")
    for extra in SHARED_HP:
        if a.modes is not None and extra in a.modes and "baton" not in a.modes:
            p.error(f"--modes: {extra} needs baton (they share the service's process)")
    bad = [s for s in a.setups if s not in MODES] + [h for h in a.hps if h not in "RBD"] + \
          [b for b in a.bes if b not in "GT"]
    if bad:
        p.error(f"unknown setup, service or job: {', '.join(bad)}")
    os.makedirs(a.out, exist_ok=True)
    # Everything this script starts inherits this: the daemon (started by the first `baton
    # run`, before it becomes its worker) and the MPS control daemon run off the roles' cores,
    # inside the slice; each worker pins itself to its role's cores (workers.py).
    if BOTH_CPUS:
        os.sched_setaffinity(0, REST_CPUS)
    m = Matrix(a)
    if not os.access(m.baton, os.X_OK):
        p.error(f"no baton executable at {m.baton} (set BATON_BIN)")
    m.say(f"machine: {m.raw['machine']}; commit {m.raw['commit']}; setups {a.setups}, "
          f"services {a.hps}, jobs {a.bes}, {a.repeats} repeat(s)")
    m.start_stallwatch()
    try:
        for setup in a.setups:
            try:
                m.run_setup(setup)
            except Exception as e:  # noqa: BLE001 (the other setups still run; the raw file says why)
                m.raw["notes"].append(f"setup {setup} aborted: {e!r}")
                m.say(f"setup {setup} aborted: {e!r}")
                m.save()
    finally:
        m.stop_stallwatch()
    m.say("done; analysing")
    analyze.main([a.out])


if __name__ == "__main__":
    main()
