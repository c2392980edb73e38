#!/usr/bin/env python3
"""Does the daemon hold a best-effort flood back for a service at all? A quick check on the
GPU machine, for each setup and each Baton build given:

  python3 scripts/gpu/hold/check.py --out DIR [--bin .gpu/baton ...] [--setups S,M] [--seconds 4]

A small service (HP: --per 1024² fp16 matmuls, a synchronize every 20, --think-ms between requests)
beside a bf16 8192³ GEMM flood (BE), each its own process: HP alone, then natively beside the
flood, then both under `baton run` (`--priority 10`, and `--priority 0` with each of --be-modes' flags;
one daemon started here with BATON_LOG=debug, the flood's own log at info). While both run under Baton, `baton list --json` is sampled every
0.25 s (the queues' status and claims as the daemon sees them); each process's exit report
(`BATON_REPORT`) says how many commands its queues held back and the command time they
measured. Writes DIR/hold<TAG>.json and, per build and setup, the daemon's log, the lists and
the flood's own log.
Minutes, not the matrix's hour: for telling "does not hold" from "holds too little".
"""
import argparse, glob, json, os, signal, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "apps"))
from mps import mps  # noqa: E402

HP_CODE = r"""
import json, sys, time, torch
secs, per, think = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1e3
a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    for _ in range(50): a @ a
    s.synchronize()
    lat, t_end = [], time.perf_counter() + secs
    while time.perf_counter() < t_end:
        t0 = time.perf_counter()
        for i in range(per):
            a @ a
            if i % 20 == 19: s.synchronize()
        s.synchronize()
        lat.append(time.perf_counter() - t0)
        time.sleep(think)
lat.sort()
print(json.dumps({"n": len(lat), "p50_ms": lat[len(lat) // 2] * 1e3,
                  "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e3}), flush=True)
"""

BE_CODE = r"""
import json, sys, time, torch
stop = sys.argv[1]
n = 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
for _ in range(8): torch.matmul(a, b, out=c)
torch.cuda.synchronize()
print("ready", flush=True)
k, t0 = 0, time.perf_counter()
evs = []
import os
while not os.path.exists(stop):
    torch.matmul(a, b, out=c)
    e = torch.cuda.Event(); e.record(); evs.append(e)
    if len(evs) > 4:
        evs.pop(0).synchronize()
    k += 1
    if k % 16 == 0:
        print(json.dumps({"t": time.perf_counter() - t0, "gemms": k}), flush=True)
torch.cuda.synchronize()
"""


# How the flood runs under Baton (--be-modes): held back as by default, with two commands in
# flight instead of sixteen, giving way (--yield: under MPS, on BATON_YIELD_SMS while outranked),
# confined to 112 SMs and isolated (--sms 112).
BE_MODES = {"held": [], "w2": ["--threshold", "2", "--batch", "1"], "yield": ["--yield"],
            "sms": ["--sms", "112"]}


def read_lines(p, sink):
    for line in p.stdout:
        sink.append(line.strip())


class Check:
    def __init__(self, a, baton, tag, setup, env):
        self.a, self.baton, self.tag, self.setup, self.env = a, baton, tag, setup, env
        self.dir = os.path.join(a.out, f"{tag}-{setup}")
        os.makedirs(self.dir, exist_ok=True)

    def cmd(self, prio, flags=()):
        return [] if prio is None else [self.baton, "run", "--priority", str(prio), *flags, "--"]

    def be(self, prio, flags=(), err=None, env=None):
        self.stopfile = os.path.join(tempfile.gettempdir(), f"baton-hold-stop-{time.monotonic_ns()}")
        p = subprocess.Popen(self.cmd(prio, flags) + [sys.executable, "-c", BE_CODE, self.stopfile],
                             stdout=subprocess.PIPE, stderr=err, text=True, env=env or self.env,
                             start_new_session=True)
        lines = []
        assert p.stdout.readline().strip() == "ready", "the flood did not start"
        threading.Thread(target=read_lines, args=(p, lines), daemon=True).start()
        return p, lines

    def stop(self, p, lines, t_from):
        open(self.stopfile, "w").close()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        pts = [json.loads(x) for x in lines if x.startswith("{")]
        pts = [q for q in pts if q["t"] >= t_from]
        if len(pts) < 2:
            return None
        return (pts[-1]["gemms"] - pts[0]["gemms"]) * 2 * 8192 ** 3 / 1e12 / (pts[-1]["t"] - pts[0]["t"])

    def hp(self, prio):
        shape = [str(self.a.seconds), str(self.a.per), str(self.a.think_ms)]
        out = subprocess.run(self.cmd(prio) + [sys.executable, "-c", HP_CODE, *shape],
                             capture_output=True, text=True, env=self.env, timeout=120)
        if out.returncode != 0:
            return {"error": out.stderr[-2000:]}
        return json.loads(out.stdout.strip().splitlines()[-1])

    def sample_lists(self, stop, into):
        while not stop.is_set():
            r = subprocess.run([self.baton, "list", "--json"], capture_output=True, text=True, env=self.env)
            into.append({"t": time.time(), "out": r.stdout.strip() or r.stderr.strip()})
            time.sleep(0.25)

    def run(self):
        res = {"build": self.tag, "setup": self.setup}
        res["hp_alone"] = self.hp(None)
        p, lines = self.be(None)
        time.sleep(3.0)
        res["be_alone_tflops"] = self.stop(p, lines, 0.5)
        p, lines = self.be(None)
        time.sleep(0.5)
        res["hp_native"] = self.hp(None)
        res["be_native_tflops"] = self.stop(p, lines, 0.5)
        # Under Baton: one daemon, started here, logging.
        reports = os.path.join(self.dir, "reports")
        os.makedirs(reports, exist_ok=True)
        env = dict(self.env, BATON_REPORT=reports)
        log = open(os.path.join(self.dir, "daemon.log"), "w")
        d = subprocess.Popen([self.baton, "daemon", "--idle-exit", "120"], env=dict(env, BATON_LOG="debug"),
                             stdout=subprocess.DEVNULL, stderr=log)
        for _ in range(100):
            if subprocess.run([self.baton, "list", "--json"], env=env, capture_output=True).returncode == 0:
                break
            time.sleep(0.05)
        self.env = env
        res["baton"] = {}
        for mode in self.a.be_modes.split(","):
            flags = BE_MODES[mode]
            err = open(os.path.join(self.dir, f"be-{mode}.log"), "w")
            p, lines = self.be(0, flags, err, dict(env, BATON_LOG="info"))
            time.sleep(self.a.warm_s)
            stop, lists = threading.Event(), []
            th = threading.Thread(target=self.sample_lists, args=(stop, lists), daemon=True)
            th.start()
            hp = self.hp(10)
            stop.set(); th.join()
            res["baton"][mode] = {"flags": list(flags), "hp": hp, "be_tflops": self.stop(p, lines, 0.5)}
            json.dump(lists, open(os.path.join(self.dir, f"lists-{mode}.json"), "w"), indent=1)
        subprocess.run([self.baton, "daemon", "--stop"], env=env, capture_output=True)
        try:
            d.wait(timeout=10)
        except subprocess.TimeoutExpired:
            d.kill()
        res["reports"] = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(reports, "*.json")))]
        return res


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--bin", action="append", help="a baton binary (repeatable; default .gpu/baton)")
    p.add_argument("--setups", default="S,M")
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--per", type=int, default=20, help="kernels per request (a synchronize every 20)")
    p.add_argument("--think-ms", type=float, default=2.0)
    p.add_argument("--warm-s", type=float, default=3.0, help="the flood alone under Baton first")
    p.add_argument("--tag", default="")
    p.add_argument("--be-modes", default="held", help=f"of {','.join(BE_MODES)}")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    bins = a.bin or [os.path.join(ROOT, ".gpu", "baton")]
    results = []
    for setup in a.setups.split(","):
        tmp = tempfile.mkdtemp(prefix="baton-hold.")
        env = dict(os.environ, BATON_SOCKET=os.path.join(tmp, "baton.sock"), PYTHONUNBUFFERED="1")
        if setup == "M":
            env = mps(tmp, env, True)
        try:
            for b in bins:
                tag = (os.path.basename(os.path.dirname(os.path.abspath(b))) or "bin") + a.tag
                r = Check(a, os.path.abspath(b), tag, setup, env).run()
                results.append(r)
                short = {k: v for k, v in r.items() if k != "reports"}
                print(json.dumps(short), flush=True)
                for rep in r["reports"]:
                    for q in (q for q in rep.get("queues", []) if q.get("priority") == 0 and q.get("commands")):
                        print(f"  report pid {rep.get('pid')}: " + json.dumps(q), flush=True)
                json.dump(results, open(os.path.join(a.out, f"hold{a.tag}.json"), "w"), indent=1)
        finally:
            if setup == "M":
                mps(tmp, env, False)


if __name__ == "__main__":
    main()
