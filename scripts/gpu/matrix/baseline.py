#!/usr/bin/env python3
"""Which standalone time a service's ratio should be read against: the services' request times
(back to back, services.py `time`) alone on the GPU in the states a matrix part passes through.

  baseline.py --out FILE.json [--mps] [--jobs T,G] [--rg 300] [--dg 12] [--release]

The matrix measures each repeat's standalone times with the job's worker present and idle; in
its first repeat the job has not run yet, in later ones it has. Phases, in order, each Rg's RG
requests then Dg's DG requests back to back (their time alone, no queueing): the service's
worker only (no job process yet); the job's worker started (built and warmed up, idle); after
each job in JOBS flooded for 5 s and stopped (idle); with --release, after the job's PyTorch
allocator returned its cached memory to the driver; the job's worker gone (exited); the same
after 10 s at rest. The SM clock, power and utilization are sampled (nvidia-smi) throughout.
Prints each phase's p10 / p50 / p90 per service and writes every sample to FILE.json.
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import analyze  # noqa: E402
from matrix import Worker  # noqa: E402
from probe_held import finish, start  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--mps", action="store_true")
    p.add_argument("--jobs", default="T,G")
    p.add_argument("--rg", type=int, default=300, help="Rg requests a phase")
    p.add_argument("--dg", type=int, default=12, help="Dg requests (64 tokens each) a phase")
    p.add_argument("--release", action="store_true", help="then empty the job's allocator cache, and time again")
    a = p.parse_args()
    jobs = a.jobs.split(",")
    tmp, log, env, smi, out = start("baton-baseline.", "Rg,Dg", jobs, a.mps)
    worker = [sys.executable, os.path.join(HERE, "services.py")]
    be = None
    try:
        hp = Worker("hp", [*worker, "hp"], env, log)
        hp.info = hp.read(420)

        def phase(name):
            t0 = time.time()
            rec = {"phase": name, "t0": t0}
            line = f"{name:24}"
            for svc, n in (("Rg", a.rg), ("Dg", a.dg)):
                ms = hp.call(300, cmd="time", hp=svc, n=n)["ms"]
                rec[svc] = ms
                line += f" {svc} p10/p50/p90 " + " / ".join(f"{analyze.pct(ms, q):.3f}" for q in (0.1, 0.5, 0.9))
            rec["t1"] = time.time()
            out["phases"].append(rec)
            print(line + " ms", flush=True)

        phase("no job process")
        be = Worker("be", [*worker, "be"], env, log)
        be.info = be.read(420)
        phase("job started, idle")
        for job in jobs:
            be.call(60, cmd="flood", be=job)
            time.sleep(5)
            be.call(120, cmd="stop")
            time.sleep(1)
            phase(f"after {job} flooded")
        if a.release:
            mib = be.call(60, cmd="release")["reserved_mib"]
            out["released_mib"] = mib
            print(f"job's allocator cache emptied: {mib[0]} -> {mib[1]} MiB reserved", flush=True)
            phase("job's cache emptied")
        be.close()
        be = None
        time.sleep(1)
        phase("job exited")
        time.sleep(10)
        phase("job exited, 10 s later")
        hp.close()
    finally:
        if be is not None:
            be.close()
        finish(tmp, env, smi, out, a.mps, a.out)


if __name__ == "__main__":
    main()
