#!/usr/bin/env python3
"""A latency-critical service on GPU 0 beside a data-parallel training job over every GPU:
natively, and under Baton with the job's ranks held back per GPU (gang independent) or
together (gang together); with and without a filler on GPU 1 that only Baton lets use what a
held gang leaves.

  multigpu.py --out DIR [--ranks N] [--repeats 3] [--samples 1100] [--load 0.25]
              [--no-filler] [--budget-s 480]
  multigpu.py --analyze DIR        (re)writes DIR/summary.json and DIR/table.md from DIR/raw.json
  multigpu.py --self-test          the analysis on made-up runs (no GPU)

The service is the matrix's Rg (scripts/gpu/matrix/services.py: ResNet-50 fp16 b8, one CUDA
graph replay per request), open loop: Poisson arrivals at --load of its capacity alone,
latency from the planned arrival. The job is scripts/gpu/multigpu/ddp_train.py under torchrun,
N ranks, one a GPU, rank r on GPU r; each rank logs every step's compute and the time it spent
in the step's all-reduce. The filler is the matrix's GEMM flood on GPU 1, at priority -10.

Everything starts once and stays warm: a native service and a service under `baton run
--priority 10`, both on GPU 0; a native training job and one under `baton run --priority 0`,
each paused (no GPU work) except while measured; the filler; one daemon, whose gang mode is
switched between measurements with `baton policy hpf gang=...`. Each repeat measures the
service alone, each training job alone, then every mode in an order that rotates from repeat
to repeat, each with the same arrival seed: the training job runs from half a second before the
service's window opens to its end. Then, once: `baton list --by-device --json` with a probe
process that names GPU 1 by UUID (its ordinal 0, where rank 1 calls it 1), and SIGKILL of rank
1 of the held gang while the service runs, polling the daemon's list until the rank is gone.

Writes DIR/raw.json after every measurement, then DIR/summary.json and DIR/table.md.
"""

import argparse
import gzip
import json
import lzma
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "matrix"))
import analyze  # noqa: E402
import matrix  # noqa: E402

SERVICE_WORKER = os.environ.get("MULTIGPU_SERVICE") or os.path.join(ROOT, "scripts", "gpu", "matrix", "services.py")
TRAINER = os.environ.get("MULTIGPU_TRAINER") or os.path.join(HERE, "ddp_train.py")
# How long the training job runs before a window opens, and how long it runs alone.
RAMP_S = 0.5
TRAIN_ALONE_S = float(os.environ.get("MULTIGPU_TRAIN_ALONE_S", "3"))
# NVLink multicast stays off on the shared GPU machines (and costs nothing here).
NCCL_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
# The modes: which training job runs, which service serves, the daemon's gang mode, the filler.
MODES = {
    "native": {"train": "native", "hp": "native", "gang": None, "filler": False},
    "independent": {"train": "baton", "hp": "baton", "gang": "independent", "filler": False},
    "together": {"train": "baton", "hp": "baton", "gang": "together", "filler": False},
    "independent+filler": {"train": "baton", "hp": "baton", "gang": "independent", "filler": True},
    "together+filler": {"train": "baton", "hp": "baton", "gang": "together", "filler": True},
    # The job held back instead of yielding (`baton run --hold`): where gangs matter.
    "held-independent+filler": {"train": "held", "hp": "baton", "gang": "independent", "filler": True},
    "held-together+filler": {"train": "held", "hp": "baton", "gang": "together", "filler": True},
}
# The training jobs: name -> `baton run` arguments (None: natively).
TRAINING = {"native": None, "baton": ["--priority", "0"], "held": ["--priority", "0", "--hold"]}


def cpu_layout(cpus, siblings):
    """The service's, the training job's and the filler's cores, in the upper half of CPUS's
    physical cores (away from the first CPU, where interrupts land); the rest for this script,
    torchrun and the daemon. All None where CPUS are fewer than 8."""
    if len(cpus) < 8:
        return {"hp": None, "train": None, "filler": None, "rest": list(cpus)}
    cs = matrix.cores(cpus, siblings)
    half = cs[len(cs) // 2 :]
    n_hp = max(1, len(cs) // 8)
    hp, filler, train = half[:n_hp], half[n_hp : n_hp + 1], half[n_hp + 1 :] or half[:1]
    flat = lambda cores: [c for core in cores for c in core]  # noqa: E731
    used = set(flat(hp) + flat(filler) + flat(train))
    return {
        "hp": flat(hp),
        "filler": flat(filler),
        "train": flat(train),
        "rest": [c for c in cpus if c not in used] or list(cpus),
    }


def gpu_uuids():
    """Each GPU's UUID, by index, from nvidia-smi (empty without it)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


class TrainingJob:
    """One torchrun job of ddp_train.py, driven through its control file."""

    def __init__(self, run, name, ranks, cmd_prefix, env, cpus, log):
        self.run, self.name, self.ranks = run, name, ranks
        self.control = os.path.join(run.tmp, f"train-{name}.control")
        self.prefix = os.path.join(run.tmp, f"train-{name}")
        self.set("pause")
        if os.environ.get("MULTIGPU_TRAINER"):  # a stand-in that starts its own ranks (self-test)
            cmd = [sys.executable, TRAINER, "--ranks", str(ranks)]
        else:
            cmd = [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nproc-per-node",
                str(ranks),
                TRAINER,
            ]
        cmd += ["--control", self.control, "--out", self.prefix]
        if cpus:
            cmd = ["taskset", "-c", matrix.csv(cpus)] + cmd
        self.p = subprocess.Popen(cmd_prefix + cmd, env=env, stdout=log, stderr=log, cwd=ROOT, start_new_session=True)
        self.pids = {}

    def set(self, state):
        tmp = self.control + ".tmp"
        with open(tmp, "w") as f:
            f.write(state)
        os.replace(tmp, self.control)

    def wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for r in range(self.ranks):
                path = f"{self.prefix}.rank{r}.ready"
                if r not in self.pids and os.path.exists(path):
                    with open(path) as f:
                        self.pids[r] = json.load(f)["pid"]
            if len(self.pids) == self.ranks:
                return
            if self.p.poll() is not None:
                raise matrix.WorkerError(f"training job {self.name} exited with status {self.p.returncode}")
            time.sleep(0.2)
        raise matrix.WorkerError(f"training job {self.name}: not ready within {timeout:.0f} s")

    def stop(self, timeout=30):
        """Stops the job and returns each rank's log (None for a rank that wrote none)."""
        self.set("stop")
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
        logs = {}
        for r in range(self.ranks):
            logs[r] = read_steps(f"{self.prefix}.rank{r}.steps")
        return {"status": self.p.returncode, "ranks": logs}


class Run:
    def __init__(self, a):
        self.a = a
        self.baton = os.path.abspath(os.environ.get("BATON_BIN") or os.path.join(ROOT, "target", "release", "baton"))
        self.tmp = tempfile.mkdtemp(prefix="baton-multigpu.")
        self.log = open(os.path.join(a.out, "workers.log"), "a")
        self.t0 = time.monotonic()
        cpus = sorted(os.sched_getaffinity(0))
        self.cpus = cpu_layout(cpus, matrix.cpu_siblings(max(cpus) + 1))
        self.uuids = gpu_uuids()
        self.sock = os.path.join(self.tmp, "baton.sock")
        self.env = dict(
            os.environ, PYTHONUNBUFFERED="1", MATRIX_SERVICES="Rg", MATRIX_JOBS="G", BATON_SOCKET=self.sock, **NCCL_ENV
        )
        self.raw = {
            "schema": "baton.multigpu-raw/1",
            "machine": matrix.machine(),
            "gpus": self.uuids,
            "commit": os.environ.get("BATON_COMMIT", "unknown"),
            "args": vars(a),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "modes": {m: MODES[m] for m in a.modes},
            "cpus": self.cpus,
            "records": [],
            "lists": {},
            "checks": {},
            "notes": [],
        }
        self.workers, self.jobs, self.daemon, self.gang = {}, {}, None, None

    def elapsed(self):
        return time.monotonic() - self.t0

    def say(self, msg):
        print(f"[{self.elapsed():6.1f} s] {msg}", flush=True)

    def save(self):
        self.raw["elapsed_s"] = round(self.elapsed(), 1)
        path = os.path.join(self.a.out, "raw.json")
        with open(path + ".tmp", "w") as f:
            json.dump(self.raw, f)
        os.replace(path + ".tmp", path)

    def record(self, rec):
        self.raw["records"].append(rec)
        self.save()

    def baton_cmd(self, *args):
        return subprocess.run([self.baton, *args], env=self.env, capture_output=True, text=True, timeout=30)

    def start_daemon(self):
        pin = self.cpus["rest"]
        self.daemon = subprocess.Popen(
            [self.baton, "daemon", "--socket", self.sock, "--idle-exit", "900"],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            preexec_fn=lambda: os.sched_setaffinity(0, pin),
        )
        for _ in range(200):
            if self.daemon.poll() is not None:
                raise matrix.WorkerError(f"the daemon exited with status {self.daemon.returncode}")
            if self.baton_cmd("list", "--json").returncode == 0:
                return
            time.sleep(0.05)
        raise matrix.WorkerError("the daemon did not answer")

    def set_gang(self, gang):
        if gang == self.gang:
            return
        r = self.baton_cmd("policy", "hpf", f"gang={gang}")
        if r.returncode != 0:
            raise matrix.WorkerError(f"baton policy hpf gang={gang}: {r.stderr.strip()}")
        self.gang = gang

    def list_doc(self):
        r = self.baton_cmd("list", "--by-device", "--json")
        if r.returncode != 0 or not r.stdout.strip():
            return None
        try:
            return json.loads(r.stdout)
        except ValueError:
            return None

    def worker(self, name, role, baton_args, cpus, visible, extra_env=None):
        env = dict(self.env, CUDA_VISIBLE_DEVICES=visible, **(extra_env or {}))
        if cpus:
            env["MATRIX_CPUS"] = matrix.csv(cpus)
        cmd = [sys.executable, SERVICE_WORKER, role]
        if baton_args is not None:
            cmd = [self.baton, "run", *baton_args, "--"] + cmd
        self.workers[name] = matrix.Worker(name, cmd, env, self.log)

    def start(self):
        a = self.a
        self.start_daemon()
        self.set_gang("independent")
        self.worker("hp-native", "hp", None, self.cpus["hp"], "0")
        self.worker("hp-baton", "hp", ["--priority", "10"], self.cpus["hp"], "0")
        if a.filler:
            self.worker("filler", "be", ["--priority=-10"], self.cpus["filler"], "1")
        needed = {MODES[m]["train"] for m in a.modes} | {"native", "baton"}
        for name in (n for n in TRAINING if n in needed):
            args = TRAINING[name]
            prefix = [] if args is None else [self.baton, "run", *args, "--"]
            self.jobs[name] = TrainingJob(self, name, a.ranks, prefix, self.env, self.cpus["train"], self.log)
        for w in self.workers.values():
            w.info = w.read(600)
            self.raw.setdefault("workers", {})[w.name] = w.info
            self.say(f"{w.name} ready (pid {w.info['pid']}, baton={w.info['baton']}, {w.info['gpu_mib']} MiB)")
        for j in self.jobs.values():
            j.wait_ready(600)
            self.raw.setdefault("training_pids", {})[j.name] = j.pids
            self.say(f"training job {j.name} ready (ranks {j.pids})")
        self.save()

    def calibrate(self):
        nat = self.workers["hp-native"]
        r = nat.call(300, cmd="time", hp="Rg", n=100)
        b2b = analyze.median(r["ms"])
        probe = nat.call(300, cmd="serve", hp="Rg", rate=200 / b2b, n=100, seed=999, cap_s=60)
        ms = max(b2b, analyze.median(probe["lat_ms"]))
        self.rate = self.a.load * 1e3 / ms
        self.raw["service"] = {
            "service": "Rg",
            "load": self.a.load,
            "rate": self.rate,
            "request_ms": ms,
            "back_to_back_ms": b2b,
        }
        self.say(f"Rg alone {ms:.3f} ms a request in open loop ({b2b:.3f} back to back); {self.rate:.1f}/s")
        self.save()

    def serve(self, w, rep, snapshot=None):
        span = self.a.samples / self.rate
        snap = {}
        if snapshot:
            t = threading.Timer(min(1.0, span / 2), lambda: snap.update(doc=self.list_doc()))
            t.start()
        st = matrix.steal_s()
        r = w.call(
            max(120, 4 * self.a.cap * span),
            cmd="serve",
            hp="Rg",
            rate=self.rate,
            n=self.a.samples,
            seed=1000 * rep,
            cap_s=self.a.cap * span,
        )
        st2 = matrix.steal_s()
        if st is not None and st2 is not None:
            r["steal_s"] = round(st2 - st, 3)
        if snapshot:
            t.join()
            self.raw["lists"][snapshot] = snap.get("doc")
        return r

    def train_alone(self, rep):
        self.set_gang("independent")
        for name, job in self.jobs.items():
            job.set("run")
            t_from = time.monotonic() + RAMP_S
            time.sleep(RAMP_S + TRAIN_ALONE_S)
            t_to = time.monotonic()
            job.set("pause")
            self.record({"kind": "train_alone", "rep": rep, "train": name, "t_from": t_from, "t_to": t_to})
        if self.a.filler:
            f = self.workers["filler"]
            t = f.call(60, cmd="flood", be="G")["t_start"]
            time.sleep(RAMP_S + TRAIN_ALONE_S)
            t_to = time.monotonic()
            log = f.call(120, cmd="stop")
            rate = analyze.window_rate(log["log"], t + RAMP_S, t_to)
            self.record({"kind": "filler_alone", "rep": rep, "rate": rate, "unit": log["unit"]})
            self.say(f"rep {rep} filler alone: {rate:.1f} {log['unit']}/s")

    def measure(self, rep, mode):
        m = MODES[mode]
        job, w = self.jobs[m["train"]], self.workers[f"hp-{m['hp']}"]
        if m["gang"]:
            self.set_gang(m["gang"])
        filler = self.workers.get("filler") if m["filler"] else None
        rec = {"kind": "cell", "rep": rep, "mode": mode, "train": m["train"]}
        try:
            if filler:
                filler.call(60, cmd="flood", be="G")
            job.set("run")
            time.sleep(RAMP_S)
            tracer = None
            if rep == 0 and mode in self.a.trace:
                path = os.path.join(self.a.out, f"trace-{mode.replace('+', '_')}.json")
                tracer = subprocess.Popen(
                    [self.baton, "trace", "--seconds", str(self.a.trace_s), "--out", path],
                    env=self.env,
                    stdout=self.log,
                    stderr=self.log,
                )
            r = self.serve(w, rep, snapshot=f"{mode}" if rep == 0 and m["gang"] else None)
            if tracer:
                tracer.wait(timeout=60)
            job.set("pause")
            rec.update(r)
            if filler:
                log = filler.call(120, cmd="stop")
                win = analyze.window_progress(log["log"], r["t_first"], r["t_last"])
                rec.update(filler_units=win["units"], filler_unit=log["unit"])
        except matrix.WorkerError as e:
            job.set("pause")
            rec["error"] = str(e)
        self.record(rec)
        if "error" in rec:
            self.say(f"rep {rep} {mode}: {rec['error']}")
        else:
            self.say(
                f"rep {rep} {mode:19}: p50 {analyze.pct(r['lat_ms'], 0.5):7.3f} p99 "
                f"{analyze.pct(r['lat_ms'], 0.99):7.3f} ms{' (' + str(r['censored']) + ' censored)' if r['censored'] else ''}"
            )

    def repeat(self, rep):
        r = self.serve(self.workers["hp-native"], rep)
        self.record({"kind": "alone", "rep": rep, **r})
        self.say(
            f"rep {rep} alone              : p50 {analyze.pct(r['lat_ms'], 0.5):7.3f} p99 {analyze.pct(r['lat_ms'], 0.99):7.3f} ms"
        )
        self.train_alone(rep)
        for mode in analyze.rotate(list(self.a.modes), rep):
            self.measure(rep, mode)

    def probe_ordinals(self):
        """A process under Baton that names GPU 1 by UUID (its ordinal 0) while the Baton
        training job's rank 1 calls it 1: the daemon's list must put them on one device."""
        if len(self.uuids) < 2:
            self.raw["checks"]["ordinals"] = {"error": "fewer than two GPUs"}
            return
        code = (
            "import time, torch; s = torch.cuda.Stream(); x = torch.ones(1 << 20, device='cuda');"
            "\nwith torch.cuda.stream(s): y = x * 2\ntorch.cuda.synchronize(); print('ready', flush=True); time.sleep(4)"
        )
        env = dict(self.env, CUDA_VISIBLE_DEVICES=self.uuids[1])
        p = subprocess.Popen(
            [self.baton, "run", "--priority=-10", "--", sys.executable, "-c", code],
            env=env,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        self.set_gang("independent")
        self.jobs["baton"].set("run")
        doc = None
        try:
            line = p.stdout.readline()
            if line.strip() == "ready":
                time.sleep(0.3)
                doc = self.list_doc()
        finally:
            self.jobs["baton"].set("pause")
            p.wait(timeout=60)
        self.raw["lists"]["probe"] = doc
        self.raw["checks"]["ordinals"] = ordinal_check(doc, p.pid, self.jobs["baton"].pids, self.uuids)
        self.say(f"check ordinals: {self.raw['checks']['ordinals']}")
        self.save()

    def kill_ranks(self):
        """kill_rank for each training job under Baton, the held one first (each kill ends
        its job)."""
        for name in ("held", "baton"):
            if name in self.jobs:
                self.kill_rank(name)

    def kill_rank(self, name):
        """SIGKILL of the last rank of job NAME, its gang held together, while the service
        runs, the daemon's list polled."""
        job, w = self.jobs[name], self.workers["hp-baton"]
        victim = max(job.pids)
        pids = set(job.pids.values())
        self.set_gang("together")
        job.set("run")
        time.sleep(RAMP_S)
        rate = min(0.9, 2.4 * self.a.load) * self.rate / self.a.load
        n = max(100, int(rate * 4))
        w.p.stdin.write(json.dumps({"cmd": "serve", "hp": "Rg", "rate": rate, "n": n, "seed": 4242, "cap_s": 8}) + "\n")
        w.p.stdin.flush()
        before, t_end, listed = [], time.monotonic() + 1.5, set()
        while time.monotonic() < t_end:
            doc = self.list_doc()
            listed = present_pids(doc, pids)
            before.append(held_pids(doc, pids))
            if len(before[-1]) == len(pids):
                break
            time.sleep(0.01)
        t_kill = time.monotonic()
        os.kill(job.pids[victim], signal.SIGKILL)
        after = []
        while time.monotonic() < t_kill + 3:
            doc = self.list_doc()
            state = (time.monotonic() - t_kill, present_pids(doc, pids), held_pids(doc, pids))
            # The timeline keeps each change of what is listed and held.
            if not after or after[-1][1:] != state[1:]:
                after.append(state)
            if job.pids[victim] not in state[1] and time.monotonic() > t_kill + 1.2:
                break
            time.sleep(0.01)
        served = w.read(60)
        t_served = time.monotonic()
        released = None
        while time.monotonic() < t_served + 3:
            held = held_pids(self.list_doc(), pids)
            if not held:
                released = time.monotonic() - t_served
                break
            time.sleep(0.02)
        gone = next((t for t, present, _ in after if job.pids[victim] not in present), None)
        self.raw["checks"][f"kill-{name}"] = {
            "victim_rank": victim,
            "victim_pid": job.pids[victim],
            "victim_listed_before": job.pids[victim] in listed,
            "held_together_seen": bool(before) and len(before[-1]) == len(pids),
            "polls_before": len(before),
            "victim_gone_after_s": gone,
            "holds_left_after_service_s": released,
            "timeline": [[round(t, 4), sorted(p), sorted(h)] for t, p, h in after],
            "service_p99_ms": analyze.pct(served.get("lat_ms", []), 0.99),
        }
        self.say(f"check kill ({name}): victim gone after {gone} s; holds left {released} s after the service stopped")
        self.save()

    def run(self):
        a = self.a
        try:
            self.say(f"machine: {self.raw['machine']}; GPUs {self.uuids}; CPUs {self.cpus}")
            self.start()
            self.calibrate()
            block = None
            for rep in range(a.repeats):
                if block and self.elapsed() + block > a.budget_s:
                    self.raw["notes"].append(f"repeat {rep} skipped: budget ({self.elapsed():.0f} s spent)")
                    self.say(f"repeat {rep} skipped (budget)")
                    continue
                t = time.monotonic()
                self.repeat(rep)
                block = time.monotonic() - t
                self.say(f"repeat {rep} took {block:.0f} s")
            for check in (self.probe_ordinals, self.kill_ranks):
                try:
                    check()
                except Exception as e:  # noqa: BLE001 (the raw file says which check broke)
                    self.raw["checks"][check.__name__] = {"error": repr(e)}
                    self.say(f"{check.__name__}: {e!r}")
        finally:
            for name, job in self.jobs.items():
                self.raw.setdefault("training", {})[name] = job.stop()
            for w in self.workers.values():
                w.close()
            if self.daemon:
                self.daemon.terminate()
                try:
                    self.daemon.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.daemon.kill()
            self.save()


def read_steps(path):
    """A rank's step log ({"steps": [[t_end, compute_s, collective_s], ...]}); a last line cut
    short by a kill is dropped; None where the rank wrote none."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    steps = []
    for line in lines:
        try:
            steps.append(json.loads(line))
        except ValueError:
            break
    return {"steps": steps}


def queues_of(doc):
    for dev in (doc or {}).get("devices", []):
        for q in dev.get("queues", []):
            yield dev.get("id"), q


def present_pids(doc, pids):
    return {q["pid"] for _, q in queues_of(doc) if q.get("pid") in pids}


def held_pids(doc, pids):
    return {q["pid"] for _, q in queues_of(doc) if q.get("pid") in pids and q.get("suspended")}


def ordinal_check(doc, probe_pid, rank_pids, uuids):
    """What the list says about the probe (GPU 1 by UUID, its ordinal 0) and the ranks: each
    rank's device and ordinals, whether the probe shares rank 1's device, and the gangs."""
    if doc is None:
        return {"error": "no list"}
    by_pid = {}
    for dev, q in queues_of(doc):
        e = by_pid.setdefault(q["pid"], {"devices": set(), "ordinals": set(), "gangs": set()})
        e["devices"].add(dev)
        e["ordinals"].add(q.get("ordinal"))
        e["gangs"].add(q.get("gang"))
    # `baton run` execs the program, so the probe's pid is the one started here.
    probe = by_pid.get(probe_pid)
    ranks = {int(r): by_pid.get(pid) for r, pid in rank_pids.items()}
    out = {
        "probe": None if probe is None else {k: sorted(map(str, v)) for k, v in probe.items()},
        "ranks": {r: None if e is None else {k: sorted(map(str, v)) for k, v in e.items()} for r, e in ranks.items()},
        "devices_listed": [d.get("id") for d in doc.get("devices", [])],
    }
    gangs = {g for e in ranks.values() if e for g in e["gangs"]}
    out["one_gang"] = len(gangs) == 1 and None not in gangs and all(ranks.values())
    r1 = ranks.get(1)
    out["probe_with_rank1"] = bool(probe and r1 and probe["devices"] == r1["devices"] and len(probe["devices"]) == 1)
    out["probe_ordinal_0"] = bool(probe and probe["ordinals"] == {0})
    out["rank1_ordinal_1"] = bool(r1 and r1["ordinals"] == {1})
    out["ranks_on_their_gpus"] = bool(
        len(uuids) >= len(ranks)
        and all(e and len(e["devices"]) == 1 and uuids[r] in next(iter(e["devices"])) for r, e in ranks.items())
    )
    return out


# --- analysis ---------------------------------------------------------------------------------


def steps_of(rank_log):
    return (rank_log or {}).get("steps") or []


def window_steps(steps, t_from, t_to):
    """Steps ending inside [t_from, t_to]: their count, and the summed compute and collective
    seconds."""
    inside = [s for s in steps if t_from <= s[0] <= t_to]
    return len(inside), sum(s[1] for s in inside), sum(s[2] for s in inside)


def ratio_interval(boot, reps, alone, q):
    """The pooled Q-quantile of REPS over ALONE's, with a 90 % bootstrap interval."""
    if not any(reps) or not any(alone):
        return None, None, None
    pooled = [x for r in reps for x in r]
    ref = [x for r in alone for x in r]
    est = analyze.pct(pooled, q) / analyze.pct(ref, q)
    draws = [a / b for a, b in zip(boot.quantile_draws(reps, q), boot.quantile_draws(alone, q), strict=True)]
    lo, hi = analyze.interval(draws)
    return est, lo, hi


def summarize(raw, boot_n=1000):
    boot = analyze.Boot(boot_n)
    recs = [r for r in raw["records"] if "error" not in r]
    training = raw.get("training", {})
    logs = {name: {int(k): v for k, v in t.get("ranks", {}).items()} for name, t in training.items()}
    alone = [r["lat_ms"] for r in recs if r["kind"] == "alone"]
    out = {"schema": "baton.multigpu-summary/1", "commit": raw.get("commit"), "machine": raw.get("machine")}
    out["service"] = raw.get("service")
    out["alone"] = {
        "samples": sum(len(x) for x in alone),
        "p50_ms": analyze.pct([x for r in alone for x in r], 0.5),
        "p99_ms": analyze.pct([x for r in alone for x in r], 0.99),
    }
    # The training jobs alone: rank 0's steps/s, each rank's share of time in the all-reduce.
    train_alone = {}
    for name in logs:
        n = t = 0.0
        coll = {}
        for r in (x for x in recs if x["kind"] == "train_alone" and x["train"] == name):
            for rank, log in logs[name].items():
                k, _, c = window_steps(steps_of(log), r["t_from"], r["t_to"])
                coll[rank] = coll.get(rank, 0.0) + c
                if rank == 0:
                    n += k
            t += r["t_to"] - r["t_from"]
        train_alone[name] = {
            "steps_per_s": n / t if t else None,
            "collective_share": {r: c / t for r, c in sorted(coll.items())} if t else {},
        }
    out["train_alone"] = train_alone
    fill_alone = [r["rate"] for r in recs if r["kind"] == "filler_alone"]
    out["filler_alone"] = sum(fill_alone) / len(fill_alone) if fill_alone else None
    modes = {}
    for mode in raw.get("modes", {}):
        cells = [r for r in recs if r["kind"] == "cell" and r["mode"] == mode and r.get("lat_ms")]
        if not cells:
            continue
        train = cells[0]["train"]
        lat = [c["lat_ms"] for c in cells]
        pooled = [x for r in lat for x in r]
        p99, p99_lo, p99_hi = ratio_interval(boot, lat, alone, 0.99)
        p50, p50_lo, p50_hi = ratio_interval(boot, lat, alone, 0.5)
        n = t = 0.0
        coll = {}
        for c in cells:
            span = c["t_last"] - c["t_first"]
            t += span
            for rank, log in logs.get(train, {}).items():
                k, _, cs = window_steps(steps_of(log), c["t_first"], c["t_last"])
                coll[rank] = coll.get(rank, 0.0) + cs
                if rank == 0:
                    n += k
        fill = [(c["filler_units"], c["t_last"] - c["t_first"]) for c in cells if c.get("filler_units") is not None]
        entry = {
            "train": train,
            "repeats": len(cells),
            "samples": len(pooled),
            "censored": sum(c.get("censored", 0) for c in cells),
            "p50_ms": analyze.pct(pooled, 0.5),
            "p99_ms": analyze.pct(pooled, 0.99),
            "p99_x": p99,
            "p99_x_interval": [p99_lo, p99_hi],
            "p50_x": p50,
            "p50_x_interval": [p50_lo, p50_hi],
            "steps_per_s": n / t if t else None,
            "collective_share": {r: c / t for r, c in sorted(coll.items())} if t else {},
            "filler_rate": sum(u for u, _ in fill) / sum(s for _, s in fill) if fill else None,
        }
        alone_rate = train_alone.get(train, {}).get("steps_per_s")
        entry["steps_vs_alone"] = entry["steps_per_s"] / alone_rate if alone_rate and entry["steps_per_s"] else None
        modes[mode] = entry
    nat = modes.get("native", {}).get("steps_per_s")
    for e in modes.values():
        e["steps_vs_native"] = e["steps_per_s"] / nat if nat and e["steps_per_s"] else None
    out["modes"] = modes
    out["checks"] = raw.get("checks", {})
    return out


def fmt(v, spec="{:.2f}"):
    return "–" if v is None else spec.format(v)


def table(s):
    lines = [
        "| mode | service p99 × alone (90 % interval) | p50 × alone | samples | training steps/s (× alone, × native) | "
        "time in the all-reduce, rank 0 / 1 / … | filler on GPU 1 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    a = s["alone"]
    lines.append(
        f"| service alone | {fmt(a['p99_ms'], '{:.2f} ms')} | {fmt(a['p50_ms'], '{:.2f} ms')} | {a['samples']} | – | – | – |"
    )
    for name, t in s["train_alone"].items():
        share = " / ".join(f"{100 * v:.0f} %" for v in t["collective_share"].values())
        lines.append(f"| training alone ({name}) | – | – | – | {fmt(t['steps_per_s'])} | {share or '–'} | – |")
    fa = s.get("filler_alone")
    for mode, e in s["modes"].items():
        lo, hi = e["p99_x_interval"]
        share = " / ".join(f"{100 * v:.0f} %" for v in e["collective_share"].values())
        filler = "–"
        if e["filler_rate"] is not None:
            filler = f"{e['filler_rate']:.0f} TFLOP/s" + (
                f" ({100 * e['filler_rate'] / fa:.0f} % of alone)" if fa else ""
            )
        cens = f" ({e['censored']} censored)" if e["censored"] else ""
        lines.append(
            f"| {mode} | ×{fmt(e['p99_x'])} ({fmt(lo)}–{fmt(hi)}){cens} | ×{fmt(e['p50_x'])} | {e['samples']} | "
            f"{fmt(e['steps_per_s'])} (×{fmt(e['steps_vs_alone'])}, ×{fmt(e['steps_vs_native'])}) | {share or '–'} | {filler} |"
        )
    return "\n".join(lines) + "\n"


def load_raw(d):
    """DIR/raw.json, or the DIR/raw.json.xz (or .gz) a results page keeps."""
    path = os.path.join(d, "raw.json")
    if os.path.exists(path):
        with open(path) as f:
            raw = json.load(f)
    elif os.path.exists(path + ".xz"):
        with lzma.open(path + ".xz", "rt") as f:
            raw = json.load(f)
    else:
        with gzip.open(path + ".gz", "rt") as f:
            raw = json.load(f)
    if raw.get("schema") != "baton.multigpu-raw/1":
        raise SystemExit(f"{d}: not a multi-GPU raw file ({raw.get('schema')})")
    return raw


def analyze_dir(d, boot_n=1000):
    raw = load_raw(d)
    s = summarize(raw, boot_n)
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(s, f, indent=1, default=str)
    t = table(s)
    with open(os.path.join(d, "table.md"), "w") as f:
        f.write(t)
    print(t)
    return s


def self_test():
    """The analysis on a made-up run: a service of 2 ms alone and 3 ms beside the native job,
    2.2 ms under Baton; rank logs of 10 steps/s alone."""

    def steps(t0, t1, rate, coll):
        n = int((t1 - t0) * rate)
        return [[t0 + (i + 1) / rate, 1 / rate - coll, coll] for i in range(n)]

    recs, t = [], 100.0
    ranks = {"native": {0: [], 1: []}, "baton": {0: [], 1: []}}
    for rep in range(3):
        recs.append({"kind": "alone", "rep": rep, "lat_ms": [2.0 + (i % 10) / 100 for i in range(1000)]})
        for name in ranks:
            recs.append({"kind": "train_alone", "rep": rep, "train": name, "t_from": t, "t_to": t + 3})
            for r in (0, 1):
                ranks[name][r] += steps(t, t + 3, 10, 0.01)
            t += 4
        recs.append({"kind": "filler_alone", "rep": rep, "rate": 700.0, "unit": "TFLOP"})
        for mode, scale, rate in (("native", 1.5, 8), ("together", 1.1, 6), ("together+filler", 1.1, 6)):
            train = "native" if mode == "native" else "baton"
            rec = {
                "kind": "cell",
                "rep": rep,
                "mode": mode,
                "train": train,
                "lat_ms": [scale * (2.0 + (i % 10) / 100) for i in range(1000)],
                "censored": 0,
                "t_first": t,
                "t_last": t + 10,
            }
            if mode.endswith("filler"):
                rec.update(filler_units=3500.0, filler_unit="TFLOP")
            recs.append(rec)
            ranks[train][0] += steps(t, t + 10, rate, 0.02)
            ranks[train][1] += steps(t, t + 10, rate, 0.05)
            t += 11
    raw = {
        "schema": "baton.multigpu-raw/1",
        "modes": {m: MODES[m] for m in ("native", "together", "together+filler")},
        "records": recs,
        "training": {n: {"ranks": {str(r): {"steps": s} for r, s in v.items()}} for n, v in ranks.items()},
    }
    s = summarize(raw, boot_n=200)
    m = s["modes"]
    assert abs(s["train_alone"]["native"]["steps_per_s"] - 10) < 0.5, s["train_alone"]
    assert abs(m["native"]["p99_x"] - 1.5) < 1e-9 and abs(m["together"]["p99_x"] - 1.1) < 1e-9, m
    lo, hi = m["native"]["p99_x_interval"]
    assert lo <= 1.5 <= hi, (lo, hi)
    assert abs(m["native"]["steps_per_s"] - 8) < 0.3 and abs(m["together"]["steps_vs_native"] - 0.75) < 0.05, m
    assert abs(m["together"]["collective_share"][1] - 0.3) < 0.02, m["together"]
    assert abs(m["together+filler"]["filler_rate"] - 350) < 1e-9 and m["together"]["filler_rate"] is None
    assert "×1.50" in table(s) and "50 % of alone" in table(s), table(s)
    # The list checks, on a made-up list: the probe on GPU 1 as its ordinal 0 beside rank 1.
    q = lambda pid, o, g, s=False: {"pid": pid, "ordinal": o, "gang": g, "suspended": s}  # noqa: E731
    doc = {
        "devices": [
            {"id": "GPU-aaa", "queues": [q(10, 0, "g1"), q(10, 0, "g1", True), q(30, 0, None)]},
            {"id": "GPU-bbb", "queues": [q(11, 1, "g1", True), q(20, 0, None)]},
        ]
    }
    c = ordinal_check(doc, 20, {"0": 10, "1": 11}, ["GPU-aaa", "GPU-bbb"])
    assert c["one_gang"] and c["probe_with_rank1"] and c["probe_ordinal_0"] and c["rank1_ordinal_1"], c
    assert c["ranks_on_their_gpus"], c
    assert held_pids(doc, {10, 11}) == {10, 11} and present_pids(doc, {11, 99}) == {11}
    c = ordinal_check(doc, 20, {"0": 10, "1": 30}, ["GPU-aaa", "GPU-bbb"])
    assert not c["one_gang"] and not c["probe_with_rank1"], c
    assert ordinal_check(None, 1, {}, []) == {"error": "no list"}
    assert cpu_layout(list(range(4)), {})["hp"] is None
    lay = cpu_layout(list(range(32)), {c: [c] for c in range(32)})
    assert len(lay["hp"]) == 4 and len(lay["filler"]) == 1 and len(lay["train"]) == 11 and 0 in lay["rest"], lay
    dry_run()
    recorded_check()
    print("multigpu.py self-test: ok")


def recorded_check():
    """The committed run's summary follows from its committed raw file: every mode's samples,
    pooled p50 and p99, steps/s and filler rate (the intervals take fewer draws here)."""
    d = os.path.join(ROOT, "docs", "benchmarks", "multigpu", "h200x2")
    with open(os.path.join(d, "summary.json")) as f:
        committed = json.load(f)
    s = summarize(load_raw(d), boot_n=50)
    assert set(s["modes"]) == set(committed["modes"]) and s["modes"], (s["modes"].keys(), committed["modes"].keys())
    for mode, e in s["modes"].items():
        k = committed["modes"][mode]
        for f in ("samples", "censored", "p50_ms", "p99_ms", "p99_x", "p50_x", "steps_per_s", "filler_rate"):
            assert e[f] == k[f] or abs(e[f] - k[f]) < 1e-9, (mode, f, e[f], k[f])


def dry_run():
    """The whole driver without a GPU: a shim for `baton` (run execs the program; daemon waits;
    the rest answer nothing), the matrix's stand-in worker and fake_train.py; every mode must
    be measured in both repeats, the training logs read, the checks report what they lacked."""
    import selftest  # the matrix's: its stand-in for `baton`

    tmp = tempfile.mkdtemp(prefix="multigpu-selftest.")
    env = dict(
        os.environ,
        BATON_BIN=selftest.shim(tmp),
        MULTIGPU_SERVICE=os.path.join(HERE, "..", "matrix", "fake_worker.py"),
        MULTIGPU_TRAINER=os.path.join(HERE, "fake_train.py"),
        MULTIGPU_TRAIN_ALONE_S="0.3",
        MATRIX_FAKE_DIR=tmp,
    )
    out = os.path.join(tmp, "out")
    args = [sys.executable, os.path.abspath(__file__), "--out", out, "--repeats", "2", "--samples", "100"]
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"dry run failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    assert set(s["modes"]) == set(MODES), s["modes"].keys()
    for mode, e in s["modes"].items():
        assert e["repeats"] == 2 and e["samples"] == 200, (mode, e)
        # Measured from the stand-in's step log (a step per 20 ms of wall time, so its rate is
        # the machine's, not a fixed number: only that there is one is checked).
        assert e["steps_per_s"] and e["steps_per_s"] > 0, (mode, e)
        assert set(e["collective_share"]) == {"0", "1"}, (mode, e)
        assert (e["filler_rate"] is not None) == mode.endswith("filler"), (mode, e)
    assert s["train_alone"]["baton"]["steps_per_s"] > 0, s["train_alone"]
    assert s["checks"]["ordinals"] == {"error": "fewer than two GPUs"}, s["checks"]
    for name in ("held", "baton"):
        assert s["checks"][f"kill-{name}"]["victim_rank"] == 1, s["checks"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out")
    p.add_argument("--analyze", metavar="DIR")
    p.add_argument("--self-test", action="store_true")
    p.add_argument("--ranks", type=int, default=None, help="training ranks, one a GPU (default: every GPU)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--samples", type=int, default=1100, help="latency samples per measurement")
    p.add_argument("--load", type=float, default=0.25, help="the service's load, a share of its capacity alone")
    p.add_argument("--cap", type=float, default=1.5, help="stop starting requests past this many planned spans")
    p.add_argument("--no-filler", dest="filler", action="store_false")
    p.add_argument("--modes", default=None, help="comma-separated, among " + ", ".join(MODES))
    p.add_argument("--trace", default="", help="modes whose first window `baton trace` records")
    p.add_argument("--trace-s", type=float, default=2.0, help="how long each trace records")
    p.add_argument("--budget-s", type=float, default=480, help="no repeat starts that would not end by then")
    a = p.parse_args(argv)
    if a.self_test:
        self_test()
        return
    if a.analyze:
        analyze_dir(a.analyze)
        return
    if not a.out:
        p.error("--out DIR is needed (or --analyze DIR, --self-test)")
    gpus = len(gpu_uuids()) if not os.environ.get("MULTIGPU_TRAINER") else 2
    a.ranks = a.ranks or gpus
    if not 1 <= a.ranks <= max(gpus, 1):
        p.error(f"--ranks {a.ranks}: nvidia-smi lists {gpus} GPU(s)")
    a.filler = a.filler and a.ranks >= 2
    a.modes = (a.modes or ",".join(m for m in MODES if a.filler or not MODES[m]["filler"])).split(",")
    a.trace = [m for m in a.trace.split(",") if m]
    bad = [m for m in a.modes + a.trace if m not in MODES] + (["native"] if "native" not in a.modes else [])
    if bad:
        p.error(f"unknown modes or native missing: {bad}")
    if any(MODES[m]["filler"] for m in a.modes) and not a.filler:
        p.error("filler modes need two ranks or more and no --no-filler")
    if a.samples < 100 or a.repeats < 1 or not 0 < a.load < 1:
        p.error("--samples >= 100, --repeats >= 1, 0 < --load < 1")
    os.makedirs(a.out, exist_ok=True)
    r = Run(a)
    if not os.access(r.baton, os.X_OK):
        p.error(f"no baton executable at {r.baton} (set BATON_BIN)")
    os.sched_setaffinity(0, r.cpus["rest"])
    try:
        r.run()
    finally:
        r.say("done; analysing")
        analyze_dir(a.out)


if __name__ == "__main__":
    main()
