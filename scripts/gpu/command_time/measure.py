#!/usr/bin/env python3
"""Does Baton measure how long a stream's commands take? One command on the GPU machine
(release binaries in .gpu/ or target/release/):

  python3 scripts/gpu/command_time/measure.py --out DIR [--seconds 5]

For each flood (GEMMs of several sizes, elementwise kernels), a best-effort process floods the
GPU under `baton run --priority 0` beside a more urgent process (`--priority 10`) that only
holds a context, so the flood's queue keeps its launch window and sync points (the queue is
outranked, but nothing holds it back: the urgent process has no work queued). The flood times
its own kernels with CUDA events (the truth), and Baton's report at exit gives the command
time its queue measured (`command_us`) and told the daemon (`Hint::CommandTime`). Writes
DIR/command_time.json and prints a table, with HPF's `SHORT_COMMAND` (250 µs) for reference.
"""
import argparse, glob, json, os, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

# name: (what, code building `step`, a callable launching one kernel)
FLOODS = {
    "gemm8192": "bf16 8192x8192x8192 GEMM",
    "gemm4096": "bf16 4096x4096x4096 GEMM",
    "gemm2048": "bf16 2048x2048x2048 GEMM",
    "add64m": "fp32 add of 64 Mi elements",
    "add4m": "fp32 add of 4 Mi elements",
}

BE_CODE = r"""
import json, sys, time, torch
name, seconds = sys.argv[1], float(sys.argv[2])
if name.startswith("gemm"):
    n = int(name[4:])
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    step = lambda: torch.matmul(a, b, out=c)
else:
    n = int(name[3:-1]) * (1 << 20)
    a = torch.ones(n, device="cuda"); b = torch.ones(n, device="cuda"); c = torch.empty(n, device="cuda")
    step = lambda: torch.add(a, b, out=c)
for _ in range(20): step()
torch.cuda.synchronize()
# The truth: 200 kernels back to back between two events.
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
e0.record()
for _ in range(200): step()
e1.record(); e1.synchronize()
true_us = e0.elapsed_time(e1) * 1000 / 200
t0, k = time.perf_counter(), 0
while time.perf_counter() - t0 < seconds:
    for _ in range(64): step()
    k += 64
    torch.cuda.synchronize()
print(json.dumps({"true_us": true_us, "kernels": k}), flush=True)
"""

HP_CODE = r"""
import sys, time, torch
x = torch.ones(1, device="cuda"); x.add_(1); torch.cuda.synchronize()
print("ready", flush=True)
sys.stdin.readline()
"""


def binary():
    for p in (os.path.join(ROOT, ".gpu", "baton"), os.path.join(ROOT, "target", "release", "baton")):
        if os.access(p, os.X_OK):
            return p
    sys.exit("no baton binary in .gpu/ or target/release/")


def one(baton, name, seconds, reports):
    env = dict(os.environ, BATON_REPORT=reports)
    hp = subprocess.Popen([baton, "run", "--priority", "10", "--", sys.executable, "-c", HP_CODE],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert hp.stdout.readline().strip() == "ready"
        before = set(glob.glob(os.path.join(reports, "*.json")))
        out = subprocess.run([baton, "run", "--priority", "0", "--", sys.executable, "-c", BE_CODE,
                              name, str(seconds)], capture_output=True, text=True, env=env, check=True)
        res = json.loads(out.stdout.strip().splitlines()[-1])
        new = sorted(set(glob.glob(os.path.join(reports, "*.json"))) - before)
        measured = None
        for f in new:
            r = json.load(open(f))
            busiest = max(r["queues"], key=lambda q: q["commands"], default=None)
            if busiest and busiest["priority"] == 0:
                measured = busiest.get("command_us")
        res.update(flood=name, what=FLOODS[name], measured_us=measured)
        return res
    finally:
        hp.stdin.write("\n"); hp.stdin.flush(); hp.wait(timeout=60)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--seconds", type=float, default=5.0)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    baton = binary()
    rows = []
    with tempfile.TemporaryDirectory() as reports:
        for name in FLOODS:
            rows.append(one(baton, name, a.seconds, reports))
            r = rows[-1]
            m = "not measured" if r["measured_us"] is None else f"{r['measured_us']:.1f} us"
            print(f"{name:9} {r['what']:30} true {r['true_us']:8.1f} us   Baton {m}", flush=True)
    with open(os.path.join(a.out, "command_time.json"), "w") as f:
        json.dump({"schema": "baton.command-time/1", "short_command_us": 250, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
