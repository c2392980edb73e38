#!/usr/bin/env python3
"""What Baton's presence alone costs a graph-replayed service: the matrix's Rg (ResNet-50 b8,
one CUDA graph a request) at 25 % load, natively, under `baton run --priority 10` with no other
program, and under it beside a registered job (`baton run --priority 0`) that holds a CUDA
context and runs nothing; natively again with a cold L2 cache (MATRIX_L2_FLUSH_MB=256: each
request's work starts after 256 MiB written on its stream, as a job's data would leave the
cache); two interleaved rounds, the same arrival seeds in every condition of a round. With
MATRIX_GPU_TIME=1, each request's span on the GPU too, and each condition's median span.

  BATON_BIN=.gpu/baton python3 scripts/gpu/matrix/presence.py OUT

Writes OUT/presence.json (every request's latency, with its seed and rate) and OUT/presence.log
(the workers' and the daemon's output); prints each condition's p50, p90 and p99.
"""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import analyze  # noqa: E402
import matrix  # noqa: E402

IDLE_JOB = (
    "import time, torch; x = torch.ones(1024, device='cuda'); torch.cuda.synchronize(); "
    "print('idle job up', flush=True); time.sleep(600)"
)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out, baton = sys.argv[1], os.environ["BATON_BIN"]
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1", MATRIX_SERVICES="Rg", MATRIX_JOBS="G", MATRIX_CPUS="2,3")
    log = open(os.path.join(out, "presence.log"), "w")
    sock = os.path.join(out, "presence.sock")
    daemon = subprocess.Popen(
        [baton, "daemon", "--socket", sock, "--idle-exit", "600"], stdout=subprocess.DEVNULL, stderr=log
    )
    time.sleep(1.0)
    benv = dict(env, BATON_SOCKET=sock, BATON_LOG="info")
    native = matrix.Worker("native", [sys.executable, matrix.WORKER, "hp"], env, log)
    cold = matrix.Worker(
        "native-cold-l2", [sys.executable, matrix.WORKER, "hp"], dict(env, MATRIX_L2_FLUSH_MB="256"), log
    )
    scheduled = matrix.Worker(
        "baton", [baton, "run", "--priority", "10", "--", sys.executable, matrix.WORKER, "hp"], benv, log
    )
    idle_job = None
    try:
        for w in (native, cold, scheduled):
            w.info = w.read(420)
        rate = 0.25 / 1.6e-3
        res = {"rate": rate, "rows": []}
        for rnd in range(2):
            for cond in ("native", "native-cold-l2", "baton", "baton+idle-job"):
                if cond == "baton+idle-job":
                    idle_job = subprocess.Popen(
                        [baton, "run", "--priority", "0", "--", sys.executable, "-c", IDLE_JOB],
                        env=dict(benv, MATRIX_CPUS="8,9"),
                        stdout=log,
                        stderr=log,
                    )
                    time.sleep(8)
                w = {"native": native, "native-cold-l2": cold}.get(cond, scheduled)
                seed = 7000 + rnd
                r = w.call(300, cmd="serve", hp="Rg", rate=rate, n=1000, seed=seed, cap_s=60)
                res["rows"].append({"cond": cond, "round": rnd, "seed": seed, "rate": rate, **r})
                lat = r["lat_ms"]
                print(
                    f"{cond:15} round {rnd}: p50 {analyze.pct(lat, 0.5):.3f} p90 {analyze.pct(lat, 0.9):.3f} "
                    f"p99 {analyze.pct(lat, 0.99):.3f} ms"
                    + (f", GPU span median {analyze.median(r['gpu_ms']):.3f} ms" if r.get("gpu_ms") else ""),
                    flush=True,
                )
            if idle_job is not None:
                idle_job.kill()
                idle_job.wait()
                idle_job = None
                time.sleep(2)
        with open(os.path.join(out, "presence.json"), "w") as f:
            json.dump(res, f)
    finally:
        for w in (native, cold, scheduled):
            w.close()
        if idle_job is not None:
            idle_job.kill()
        daemon.terminate()


if __name__ == "__main__":
    main()
