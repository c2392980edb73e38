#!/usr/bin/env python3
"""What a held job leaves behind: the decoder's tokens (Dg, services.py) beside a job that is
present but launches nothing, on one GPU, under MPS or time-sliced.

  probe_held.py --out FILE.json [--mps] [--jobs T,G] [--requests 4]

Phases, each the decoder's REQUESTS requests at one a second (no queueing: every token's
latency is the token's own time): alone; beside each job's worker idle (built and warmed up,
no step running); beside the job flooding natively; beside the job flooding then stopped with
SIGSTOP (what it had launched drains, nothing new is launched); and, under Baton (the decoder
`baton run --priority 10`, the job `--priority 0`), beside the job flooding, held by Baton for
every request (the decoder's own cost under Baton is the phase alone under Baton). The SM clock and power are sampled (nvidia-smi) through every phase. Prints
each phase's token median and p90 (first tokens of requests excluded), and writes every
sample to FILE.json."""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import analyze  # noqa: E402
from matrix import Worker  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "apps"))
from mps import mps  # noqa: E402


def tokens(r):
    """The tokens of a serve answer, first tokens of each request left out (as many tokens a
    request as the answer's samples over its requests; `analyze.token_split`)."""
    split = analyze.token_split([r])
    if split is None:
        raise SystemExit(
            f"probe: a serve answer of {len(r['lat_ms'])} samples, {r.get('requests')} requests and "
            f"{r.get('censored', 0)} censored is not whole requests of tokens"
        )
    return split[1]


def clocks(path):
    return subprocess.Popen(
        [
            "nvidia-smi",
            "-i",
            os.environ.get("PROBE_GPU", "0"),
            "--query-gpu=timestamp,clocks.sm,power.draw,utilization.gpu",
            "--format=csv,noheader,nounits",
            "-lms",
            "100",
        ],
        stdout=open(path, "w"),
        stderr=subprocess.DEVNULL,
    )


def start(prefix, services, jobs, use_mps):
    """A probe's temporary folder, its workers' log and their environment (MATRIX_SERVICES,
    MATRIX_JOBS; an MPS control daemon of its own with USE_MPS), the SM clock sampled into
    clocks.csv there (`clocks`), and the output it fills."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    log = open(os.path.join(tmp, "workers.log"), "w")
    env = dict(os.environ, PYTHONUNBUFFERED="1", MATRIX_SERVICES=services, MATRIX_JOBS=",".join(jobs))
    if use_mps:
        env = mps(tmp, env, True)
    smi = clocks(os.path.join(tmp, "clocks.csv"))
    return tmp, log, env, smi, {"mps": use_mps, "jobs": jobs, "phases": []}


def finish(tmp, env, smi, out, use_mps, path):
    """Stops the clock sampler SMI (its samples into OUT) and the MPS control daemon `start`
    began, and writes OUT to PATH."""
    smi.terminate()
    smi.wait()
    with open(os.path.join(tmp, "clocks.csv")) as f:
        out["clocks"] = f.read().splitlines()
    if use_mps:
        mps(tmp, env, False)
    with open(path, "w") as f:
        json.dump(out, f)
    print(f"wrote {path}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--mps", action="store_true")
    p.add_argument("--jobs", default="T,G")
    p.add_argument("--requests", type=int, default=4)
    a = p.parse_args()
    jobs = a.jobs.split(",")
    tmp, log, env, smi, out = start("baton-probe.", "Dg", jobs, a.mps)
    baton = os.environ.get("BATON_BIN", "baton")
    sock = os.path.join(tmp, "probe.sock")
    daemon = subprocess.Popen([baton, "daemon", "--socket", sock, "--idle-exit", "900"], env=env, stderr=log)
    benv = dict(env, BATON_SOCKET=sock)
    time.sleep(1)
    worker = [sys.executable, os.path.join(HERE, "services.py")]
    hp = Worker("hp", [*worker, "hp"], env, log)
    be = Worker("be", [*worker, "be"], env, log)
    bhp = Worker("baton-hp", [baton, "run", "--priority", "10", "--", *worker, "hp"], benv, log)
    bbe = Worker("baton-be", [baton, "run", "--priority", "0", "--", *worker, "be"], benv, log)
    for w in (hp, be, bhp, bbe):
        w.info = w.read(420)

    def phase(name, w):
        t0 = time.time()
        r = w.call(300, cmd="serve", hp="Dg", rate=1.0, n=64 * a.requests, seed=7, cap_s=120)
        tk = tokens(r)
        out["phases"].append({"phase": name, "t0": t0, "t1": time.time(), "tokens_ms": tk})
        print(
            f"{name:28}: token p50 {analyze.pct(tk, 0.5):6.3f} p90 {analyze.pct(tk, 0.9):6.3f} max {max(tk):6.3f} ms",
            flush=True,
        )

    phase("alone", hp)
    phase("alone (baton)", bhp)
    for job in jobs:
        phase(f"{job} idle", hp)
        be.call(60, cmd="flood", be=job)
        time.sleep(0.5)
        phase(f"{job} flooding", hp)
        os.kill(be.p.pid, signal.SIGSTOP)
        time.sleep(0.2)
        phase(f"{job} flooding, stopped", hp)
        os.kill(be.p.pid, signal.SIGCONT)
        be.call(120, cmd="stop")
        bbe.call(60, cmd="flood", be=job)
        time.sleep(0.5)
        phase(f"{job} under baton, held", bhp)
        bbe.call(120, cmd="stop")
    for w in (hp, be, bhp, bbe):
        w.close()
    daemon.terminate()
    finish(tmp, env, smi, out, a.mps, a.out)


if __name__ == "__main__":
    main()
