#!/usr/bin/env python3
"""Transparency under contention: every workload's result under Baton against its native result,
in three roles (see scripts/gpu/transparency/run.sh, which builds the programs first).

  run.py --bin DIR --out DIR [--baton PATH] [--workloads a,b] [--roles alone,higher,suspended]
         [--levels 1,3] [--reps 3] [--native-reps 2] [--lanes 6] [--census LIB]
         [--only WORKLOAD:ROLE:LEVEL,...] [--service-rate 100]

Lanes share the one GPU, and each lane's daemon knows only its pair: every other lane's
programs are work it cannot see, and their time slices are the GPU's. Beside graph services in
many lanes, a suspended program gets little of the GPU and may outlast --timeout (seen with 8
lanes of 100-request-a-second services on an H200); use fewer lanes or a lower --service-rate.

Each workload runs natively --native-reps times first; one whose digests differ is reported
as nondeterministic natively and its Baton runs are not counted. Then, --reps times for each
role and level, under `baton run`:
  alone      the only scheduled program (`--priority 0`);
  higher     `--priority 10` beside a scheduled best-effort flood (`contender flood`, priority 0):
             the workload is never suspended, but its queues keep their window, sync points and
             idle watch, as a latency-critical program's do whenever another program is there;
  suspended  `--priority 0` beside a scheduled latency-critical prober (`contender prober SEED`,
             priority 10) that sends bursts at seeded random moments: the workload is suspended
             and resumed at arbitrary points of its work;
  suspended-graph
             `--priority 0` beside a scheduled service (priority 10) that replays a CUDA graph per
             request at seeded Poisson arrivals (`workloads.py serve-graph`), as production
             services run; the workload starts once the service's graph is captured.
Both programs of a pair get `--level L`. Lanes run pairs side by side, each lane with a daemon
of its own (BATON_SOCKET), so pairs never schedule each other. One JSON record per run goes to
OUT/transparency.jsonl (workload, role, level, rep, digest, native_digest, identical,
nondeterministic_natively, rc, seconds, what the interposer reported, whether the other program
ran for the whole run); OUT/summary.md holds the table.
With --probe PROGRAM, the attribute probe (attribute_probe.cu) runs first and its JSON line
goes to OUT/attribute-probe.json.
With --census LIB, each workload also runs natively once under the CUPTI call counter LIB, and
OUT/census.jsonl lists the driver functions it called.
"""

import argparse
import concurrent.futures as cf
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_WORKLOADS = [
    "train-side",
    "train-side-long",
    "train-default",
    "infer-side",
    "graph",
    "hf-gpt2",
    "multistream",
    "cupy",
    "jax",
    "triton",
    "gemm",
]
ALL = PYTHON_WORKLOADS + ["cuda-legacy", "cuda-ptds"]


def command(workload, bindir):
    if workload in PYTHON_WORKLOADS:
        return [sys.executable, os.path.join(HERE, "workloads.py"), workload]
    return [os.path.join(bindir, workload.replace("-", "_"))]


def last_json(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return None


def tail(text, n=1500):
    return text[-n:] if text else ""


class Runner:
    def __init__(self, args):
        self.a = args
        self.work = tempfile.mkdtemp(prefix="transparency-")
        self.lock = threading.Lock()
        self.lanes = [f"{self.work}/lane{i}.sock" for i in range(args.lanes)]
        self.free = list(self.lanes)
        self.free_cv = threading.Condition(self.lock)
        self.env = dict(os.environ, PYTHONUNBUFFERED="1", XLA_PYTHON_CLIENT_PREALLOCATE="false")
        for kv in args.env:
            k, v = kv.split("=", 1)
            self.env[k] = v
        self.out = open(os.path.join(args.out, "transparency.jsonl"), "a")

    def lane(self):
        with self.free_cv:
            while not self.free:
                self.free_cv.wait()
            return self.free.pop()

    def release(self, lane):
        with self.free_cv:
            self.free.append(lane)
            self.free_cv.notify()

    def run(self, cmd, env, timeout):
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = (
                "timeout",
                (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""),
                (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or ""),
            )
        return rc, out, err, time.monotonic() - t0

    def native(self, workload, rep):
        rc, out, err, secs = self.run(command(workload, self.a.bin), self.env, self.a.timeout)
        res = last_json(out) or {}
        return {
            "workload": workload,
            "role": "native",
            "level": None,
            "rep": rep,
            "rc": rc,
            "digest": res.get("digest"),
            "seconds": round(secs, 2),
            "error": None if rc == 0 else tail(err),
        }

    def census(self, workload):
        env = dict(
            self.env,
            LD_PRELOAD=self.a.census,
            LAUNCH_COUNT_ALL="1",
            LAUNCH_COUNT_OUT=f"{self.work}/census-{workload}.json",
        )
        rc, out, err, _ = self.run(command(workload, self.a.bin), env, self.a.timeout)
        try:
            calls = json.load(open(f"{self.work}/census-{workload}.json"))
        except (OSError, ValueError):
            calls = None
        return {"workload": workload, "rc": rc, "census": calls, "error": None if rc == 0 else tail(err)}

    def contended(self, workload, role, level, rep, seed):
        lane = self.lane()
        try:
            return self._contended(workload, role, level, rep, seed, lane)
        finally:
            self.release(lane)

    def _contended(self, workload, role, level, rep, seed, lane):
        env = dict(self.env, BATON_SOCKET=lane)
        tag = f"{workload}-{role}-L{level}-{rep}"
        report = f"{self.work}/report-{tag}.json"
        baton = [self.a.baton, "run", "--level", str(level)]
        other = None
        # The other program of the pair, at the other priority and the same level.
        other_run = [self.a.baton, "run", "--priority", "10" if role.startswith("suspended") else "0"]
        other_run += ["--level", str(level), "--"]
        if role == "higher":
            other = other_run + [os.path.join(self.a.bin, "contender"), "flood", "600"]
        elif role == "suspended":
            other = other_run + [os.path.join(self.a.bin, "contender"), "prober", str(seed), "600"]
        elif role == "suspended-graph":
            service = [os.path.join(HERE, "workloads.py"), "serve-graph", str(seed), "600", str(self.a.service_rate)]
            other = other_run + [sys.executable] + service
        prio = "10" if role == "higher" else "0"
        proc = None
        if other:
            proc = subprocess.Popen(
                other, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
            )
            if role == "suspended-graph":
                # Its graph is captured and replayed before the workload starts.
                # (A service that fails to start ends its output: the run is then not counted
                # as contended, other_ran_throughout being false.)
                proc.stdout.readline()
            else:
                time.sleep(1.5)  # its CUDA context and queue exist before the workload starts
        started_alive = proc is None or proc.poll() is None
        rc, out, err, secs = self.run(
            baton + ["--priority", prio, "--"] + command(workload, self.a.bin),
            dict(env, BATON_REPORT=report, BATON_LOG="warn"),
            self.a.timeout,
        )
        ended_alive = proc is None or proc.poll() is None
        other_out = None
        if proc:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                o, e = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                o, e = proc.communicate()
            other_out = last_json(o) or {"error": tail(e, 500)}
        res = last_json(out) or {}
        try:
            rep_json = json.loads(open(report).read().splitlines()[-1])
            summary = {
                k: rep_json.get(k)
                for k in (
                    "commands",
                    "deferred",
                    "in_order",
                    "bypassed",
                    "submitter_held",
                    "liveness_releases",
                    "level",
                    "gemm",
                )
            }
        except (OSError, ValueError, IndexError):
            summary = None
        warnings = [line for line in err.splitlines() if "WARN" in line or "baton:" in line][:5]
        return {
            "workload": workload,
            "role": role,
            "level": level,
            "rep": rep,
            "rc": rc,
            "digest": res.get("digest"),
            "seconds": round(secs, 2),
            "other_ran_throughout": bool(started_alive and ended_alive),
            "other": other_out,
            "baton_report": summary,
            "baton_warnings": warnings,
            "commit": os.environ.get("BATON_COMMIT"),
            "error": None if rc == 0 else tail(err),
        }

    def emit(self, rec):
        with self.lock:
            self.out.write(json.dumps(rec) + "\n")
            self.out.flush()
            print(
                f"{rec['workload']:14} {rec['role']:9} L{rec.get('level')} #{rec.get('rep')} "
                f"rc={rec['rc']} {rec.get('digest')} {rec.get('seconds')}s"
                + (f"  {rec['error'][-200:]!r}" if rec.get("error") else ""),
                flush=True,
            )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--baton", default="target/release/baton")
    ap.add_argument("--workloads", default=",".join(ALL))
    ap.add_argument("--roles", default="alone,higher,suspended")
    ap.add_argument("--levels", default="1,3")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--native-reps", type=int, default=2)
    ap.add_argument("--lanes", type=int, default=6)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--census", default=None)
    ap.add_argument("--probe", default=None, help="the attribute probe's program, run once first")
    ap.add_argument("--service-rate", type=float, default=100.0, help="the graph service's requests a second")
    ap.add_argument("--only", default="", help="run only these cells: WORKLOAD:ROLE:LEVEL,...")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for every run")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    r = Runner(a)
    workloads = [w for w in a.workloads.split(",") if w]
    roles = [x for x in a.roles.split(",") if x]
    levels = [int(x) for x in a.levels.split(",") if x]
    rng = random.Random(a.seed)
    records = []
    if a.probe:
        p = subprocess.run([a.probe], capture_output=True, text=True, timeout=120)
        with open(os.path.join(a.out, "attribute-probe.json"), "w") as f:
            f.write((last_json(p.stdout) and json.dumps(last_json(p.stdout))) or json.dumps({"error": tail(p.stderr)}))
            f.write("\n")
        print(f"attribute probe: {p.stdout.strip()[:2000]}", flush=True)
    with cf.ThreadPoolExecutor(a.lanes) as pool:
        if a.census:
            for f in cf.as_completed([pool.submit(r.census, w) for w in workloads]):
                with open(os.path.join(a.out, "census.jsonl"), "a") as c:
                    c.write(json.dumps(f.result()) + "\n")
        natives = [pool.submit(r.native, w, i) for i in range(a.native_reps) for w in workloads]
        for f in cf.as_completed(natives):
            rec = f.result()
            r.emit(rec)
            records.append(rec)
        native = {}
        for rec in records:
            native.setdefault(rec["workload"], []).append(rec["digest"] if rec["rc"] == 0 else None)
        only = {tuple(c.split(":")) for c in a.only.split(",") if c}
        jobs = [
            (w, role, lvl, i)
            for w in workloads
            for role in roles
            for lvl in levels
            for i in range(a.reps)
            if not only or (w, role, str(lvl)) in only
        ]
        rng.shuffle(jobs)
        futs = [pool.submit(r.contended, w, role, lvl, i, rng.randrange(1 << 30)) for (w, role, lvl, i) in jobs]
        contended = []
        for f in cf.as_completed(futs):
            rec = f.result()
            digests = native.get(rec["workload"], [])
            nondet = len(set(digests)) != 1 or None in digests
            rec["native_digest"] = digests[0] if digests else None
            rec["nondeterministic_natively"] = nondet
            # A run through which no command went under Baton tested nothing (at 46efb34 every
            # Level-2 run did so, its queues refused, and read as identical).
            rec["scheduled"] = scheduled(rec)
            rec["identical"] = (
                (not nondet) and rec["rc"] == 0 and rec["scheduled"] and rec["digest"] == rec["native_digest"]
            )
            r.emit(rec)
            contended.append(rec)
    write_summary(a.out, workloads, roles, levels, native, contended)
    shutil.rmtree(r.work, ignore_errors=True)


def scheduled(rec):
    """Whether commands of the run went through Baton, as its interposer's report says (no
    report: it cannot say, which counts as not)."""
    return bool((rec.get("baton_report") or {}).get("commands"))


def write_summary(out, workloads, roles, levels, native, contended):
    lines = [
        "| workload | native | " + " | ".join(f"{ro} L{lv}" for ro in roles for lv in levels) + " |",
        "| --- | --- | " + " | ".join("---" for _ in roles for _ in levels) + " |",
    ]
    for w in workloads:
        d = native.get(w, [])
        nondet = len(set(d)) != 1 or None in d
        cells = []
        for ro in roles:
            for lv in levels:
                rs = [x for x in contended if x["workload"] == w and x["role"] == ro and x["level"] == lv]
                ok = sum(1 for x in rs if x.get("identical"))
                unscheduled = sum(1 for x in rs if x["rc"] == 0 and not x.get("scheduled"))
                cells.append(
                    f"{ok}/{len(rs)}"
                    + ("" if all(x.get("other_ran_throughout", True) for x in rs) else " (overlap?)")
                    + (f" ({unscheduled} unscheduled)" if unscheduled else "")
                )
        lines.append(f"| {w} | {'nondeterministic' if nondet else (d[0] if d else '-')} | " + " | ".join(cells) + " |")
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
