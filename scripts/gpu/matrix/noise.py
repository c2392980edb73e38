#!/usr/bin/env python3
"""Where the matrix's run-to-run noise comes from: HP alone, many requests, under each way of
spending the think time, alternating, with the GPU's clocks sampled throughout.

  noise.py --out DIR [--hps R,B] [--n 600] [--rounds 3]

For each service and round: `hybrid` (asleep, awake for the last millisecond: the matrix's
method until this was measured) then `spin` (awake throughout, yielding the interpreter lock)
then `sleep` (asleep throughout). Writes DIR/noise.json (every latency, the worker's CPU time,
the SM clock timeline) and prints per run the median of each 50-request window, p50 and p99.
"""
import argparse, json, os, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import analyze  # noqa: E402
from matrix import HP_CPUS, Worker, with_cpus  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--hps", default="R,B")
    p.add_argument("--n", type=int, default=600)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    log = open(os.path.join(a.out, "noise-workers.log"), "a")
    clocks = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate",
                               "--format=csv,noheader", "-lms", "100"], stdout=subprocess.PIPE, text=True)
    t_clock0 = time.monotonic()
    w = Worker("noise/hp", [sys.executable, os.path.join(HERE, "workers.py"), "hp"],
               with_cpus(dict(os.environ, PYTHONUNBUFFERED="1"), HP_CPUS), log)
    w.ready(300)
    runs = []
    for rnd in range(a.rounds):
        for hp in a.hps.split(","):
            for mode in ("hybrid", "spin", "sleep"):
                r = w.call(300, cmd="hp", hp=hp, n=a.n, warmup=10, think_mode=mode)
                lat = r["lat_ms"]
                wins = [statistics.median(lat[i:i + 50]) for i in range(0, len(lat), 50)]
                runs.append({"round": rnd, "hp": hp, "think_mode": mode, **r})
                print(f"round {rnd} {hp} {mode:6}: p50 {analyze.pct(lat, .5):6.2f} p99 {analyze.pct(lat, .99):6.2f} "
                      f"cpu/req {r['cpu_s'] / len(lat) * 1e3:6.2f} ms; 50-request medians "
                      + " ".join(f"{m:5.2f}" for m in wins), flush=True)
    w.close()
    clocks.terminate()
    samples = clocks.communicate()[0].strip().splitlines()
    json.dump({"runs": runs, "clock_samples": samples, "clock_start_monotonic": t_clock0},
              open(os.path.join(a.out, "noise.json"), "w"))
    sm = [int(s.split(",")[1].split()[0]) for s in samples if "MHz" in s]
    if sm:
        print(f"SM clock over the run: min {min(sm)} median {statistics.median(sm)} max {max(sm)} MHz "
              f"({len(sm)} samples)")
    for hp in a.hps.split(","):
        for mode in ("hybrid", "spin", "sleep"):
            p50 = [analyze.pct(r["lat_ms"], .5) for r in runs if r["hp"] == hp and r["think_mode"] == mode]
            p99 = [analyze.pct(r["lat_ms"], .99) for r in runs if r["hp"] == hp and r["think_mode"] == mode]
            print(f"{hp} {mode:6}: p50 {min(p50):.2f}–{max(p50):.2f} (spread {analyze.spread(p50):.0%}), "
                  f"p99 {min(p99):.2f}–{max(p99):.2f} (spread {analyze.spread(p99):.0%})")


if __name__ == "__main__":
    main()
