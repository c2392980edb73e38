#!/usr/bin/env python3
"""What a hand-over of the GPU costs between time-sliced processes, and what Baton's time-slice
settings make of it. One command on the GPU machine (release binaries in .gpu/ or target/release/):

  python3 scripts/gpu/yield/handover.py --out DIR [--repeats 2] [--seconds 6]

A launch-bound service (HP: steps of --kernels tiny kernels, then a synchronize, then 1 ms of
think time, as a decoder's token) beside a bf16 GEMM flood (BE), each a process of its own
(no MPS: the GPU time-slices their contexts). Configurations, interleaved per repeat: native;
hold (BE held back whenever HP has work: BATON_YIELD=off); yield-Y (BE never held, its context
slice Y µs while outranked); yield-Y/run-R (also HP's slice R µs). Per configuration: HP step
p50/p99 over HP alone (measured in the same repeat), and BE's GEMM rate inside HP's window over
BE alone. Writes DIR/handover.json and prints a table.
"""
import argparse, json, os, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

HP_CODE = r"""
import json, sys, time, torch
kernels, seconds, think = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
x = torch.ones(256, device="cuda")
for _ in range(50):
    for _ in range(kernels): x.mul_(1.0000001)
    torch.cuda.synchronize()
print("ready", flush=True); sys.stdin.readline()
lat, t0 = [], time.perf_counter()
first = time.time()
while time.perf_counter() - t0 < seconds:
    s = time.perf_counter()
    for _ in range(kernels): x.mul_(1.0000001)
    torch.cuda.synchronize()
    lat.append(time.perf_counter() - s)
    time.sleep(think)
print(json.dumps({"lat": lat, "t0": first, "t1": time.time()}), flush=True)
"""

BE_CODE = r"""
import json, sys, time, torch
n = 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16); b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
for _ in range(5): a @ b
torch.cuda.synchronize()
print("ready", flush=True)
import select
done, stamps = 0, []
while True:
    for _ in range(4): c = a @ b
    torch.cuda.synchronize()
    done += 4; stamps.append((time.time(), done))
    if select.select([sys.stdin], [], [], 0)[0]:
        sys.stdin.readline(); break
print(json.dumps({"stamps": stamps, "flop_per": 2 * n ** 3}), flush=True)
"""


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


class Proc:
    def __init__(self, cmd, env, cpus):
        self.p = subprocess.Popen(["taskset", "-c", cpus, *cmd], env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
        line = self.p.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"{cmd[-3:]}: no ready line ({line!r})")

    def go(self):
        self.p.stdin.write("\n"); self.p.stdin.flush()

    def result(self, timeout=120):
        out = json.loads(self.p.stdout.readline())
        self.p.wait(timeout=timeout)
        return out


def wrap(baton, role, cfg):
    """The command prefix and environment changes for `role` under configuration `cfg`."""
    if cfg == "native":
        return [], {}
    env = {}
    if role == "be":
        if cfg == "hold":
            env["BATON_YIELD"] = "off"
        else:
            env["BATON_YIELD_SLICE_US"] = cfg.split("/")[0].split("-")[1]
    elif "/run-" in cfg:
        env["BATON_RUN_SLICE_US"] = cfg.split("/run-")[1]
    return [baton, "run", "--priority", "10" if role == "hp" else "0", "--"], env


def measure(a, baton, cfg, hp_on=True, be_on=True):
    base = dict(os.environ)
    procs = {}
    if be_on:
        pre, env = wrap(baton, "be", cfg)
        procs["be"] = Proc(pre + [sys.executable, "-c", BE_CODE], {**base, **env}, "12-15")
    if hp_on:
        pre, env = wrap(baton, "hp", cfg)
        procs["hp"] = Proc(pre + [sys.executable, "-c", HP_CODE, str(a.kernels), str(a.seconds), "0.001"],
                           {**base, **env}, "8-11")
    if be_on and hp_on:
        time.sleep(0.5)   # the flood fills its pipeline
    if hp_on:
        procs["hp"].go()
        hp = procs["hp"].result()
    else:
        time.sleep(a.seconds)
        hp = None
    if be_on:
        procs["be"].go()
        be = procs["be"].result()
    out = {"cfg": cfg}
    if hp:
        out["hp_p50"], out["hp_p99"], out["hp_n"] = pct(hp["lat"], 0.5), pct(hp["lat"], 0.99), len(hp["lat"])
    if be_on:
        st = be["stamps"]
        lo, hi = (hp["t0"], hp["t1"]) if hp else (st[0][0] + 0.5, st[-1][0])
        inside = [s for s in st if lo <= s[0] <= hi]
        if len(inside) >= 2:
            out["be_tflops"] = (inside[-1][1] - inside[0][1]) * be["flop_per"] / (inside[-1][0] - inside[0][0]) / 1e12
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--kernels", type=int, default=1000)
    p.add_argument("--configs", default="native,hold,yield-500,yield-500/run-250,yield-500/run-100,yield-2000")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    baton = os.environ.get("BATON_BIN") or next(
        (x for x in (os.path.join(ROOT, ".gpu/baton"), os.path.join(ROOT, "target/release/baton")) if os.access(x, os.X_OK)), None)
    if not baton:
        p.error("no baton executable (set BATON_BIN)")
    configs = a.configs.split(",")
    rows = []
    for rep in range(a.repeats):
        hp_alone = measure(a, baton, "native", be_on=False)
        be_alone = measure(a, baton, "native", hp_on=False)
        print(f"rep {rep} alone: HP p50 {hp_alone['hp_p50']*1e3:.2f} p99 {hp_alone['hp_p99']*1e3:.2f} ms; "
              f"BE {be_alone['be_tflops']:.0f} TFLOP/s", flush=True)
        order = configs[rep % len(configs):] + configs[:rep % len(configs)]
        for cfg in order:
            m = measure(a, baton, cfg)
            m.update(rep=rep, p50_x=m["hp_p50"] / hp_alone["hp_p50"], p99_x=m["hp_p99"] / hp_alone["hp_p99"],
                     be_share=m.get("be_tflops", 0) / be_alone["be_tflops"], alone={"hp": hp_alone, "be": be_alone})
            rows.append(m)
            print(f"rep {rep} {cfg:20s} HP p50 ×{m['p50_x']:.2f} p99 ×{m['p99_x']:.2f}  BE {m['be_share']*100:.0f} %", flush=True)
            with open(os.path.join(a.out, "handover.json"), "w") as f:
                json.dump({"kernels": a.kernels, "seconds": a.seconds, "rows": rows}, f, indent=1)
    print("\n| configuration | HP p50 × alone | HP p99 × alone | BE % of alone | repeats |\n| --- | --- | --- | --- | --- |")
    for cfg in configs:
        rs = [r for r in rows if r["cfg"] == cfg]
        med = lambda k: sorted(r[k] for r in rs)[len(rs) // 2]
        rng = lambda k, f: f"{f(min(r[k] for r in rs))}–{f(max(r[k] for r in rs))}"
        x = lambda v: f"×{v:.2f}"
        pc = lambda v: f"{v*100:.0f} %"
        print(f"| {cfg} | {x(med('p50_x'))} ({rng('p50_x', x)}) | {x(med('p99_x'))} ({rng('p99_x', x)}) | "
              f"{pc(med('be_share'))} ({rng('be_share', pc)}) | {len(rs)} |")


if __name__ == "__main__":
    main()
