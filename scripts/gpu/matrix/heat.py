#!/usr/bin/env python3
"""What a GPU-bound request pays after a job has run, with none of the job's work left: the
power cap's share of the found-idle cost.

  heat.py [--out FILE.json] [--requests 200] [--heat-ms 20] [--gaps 0,0.25,0.5,1,2,5,10,20]
  heat.py --self-test

One process, one stream, nothing scheduled. Each sample runs the matrix's G (bf16 8192³ GEMMs
back to back) for --heat-ms, synchronizes the device (nothing of the job is left on it), waits
GAP ms on the host, then replays Rg's request (ResNet-50 fp16 b8, one CUDA graph) and times it
on the GPU with events. The control replays the same request after the same wait with no job
before it (`cold`: the GPU idle for longer than any gap, as alone at 25 % load). Samples of all
gaps and the control are interleaved in a seeded random order. With NVML (pynvml), the SM clock
read just before each replay is kept too.

Prints one JSON object (and writes it to --out): per gap, the request's median, p90 and p99 on
the GPU (ms), their ratio to the control's median, and the median SM clock before it.
"""

import argparse
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "apps"))


def pct(values, q):
    """Nearest-rank percentile Q (0..1) of VALUES; None when empty."""
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * len(s) + 0.5)) - 1))]


def summarize(samples, cold_key="cold"):
    """{gap: {n, p50, p90, p99, x_cold, clock_mhz}} from {gap: [(ms, clock or None)]}."""
    base = pct([ms for ms, _ in samples.get(cold_key, [])], 0.50)
    out = {}
    for gap, rows in samples.items():
        ms = [m for m, _ in rows]
        clocks = [c for _, c in rows if c is not None]
        p50 = pct(ms, 0.50)
        out[gap] = {
            "n": len(ms),
            "p50": p50,
            "p90": pct(ms, 0.90),
            "p99": pct(ms, 0.99),
            "x_cold": round(p50 / base, 3) if base and p50 is not None else None,
            "clock_mhz": pct(clocks, 0.50),
        }
    return out


def spin(ms):
    """Waits MS on the host, awake, so the wait is as asked."""
    end = time.monotonic() + ms / 1e3
    while time.monotonic() < end:
        pass


def clock_reader():
    """A function giving the SM clock (MHz) of device 0, or None without NVML."""
    try:
        import pynvml  # noqa: PLC0415 (optional)

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(int(os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]))
        return lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
    except Exception:  # noqa: BLE001 (no NVML: clocks are left out)
        return lambda: None


def run(a):
    import torch  # noqa: PLC0415 (the self-test needs no GPU)
    from resnet_workload import resnet50  # noqa: PLC0415

    dev = torch.device("cuda")
    stream = torch.cuda.Stream()
    torch.manual_seed(0)
    with torch.no_grad(), torch.cuda.stream(stream):
        r = resnet50().to(dev).half().eval()
        x = torch.randn(8, 3, 224, 224, device=dev, dtype=torch.half)
        for _ in range(3):
            r(x)
        stream.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=stream):
            r(x)
        p = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        q = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        torch.mm(p, q)
    torch.cuda.synchronize()
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    clock = clock_reader()

    def heat(ms):
        end = time.monotonic() + ms / 1e3
        with torch.cuda.stream(stream):
            while time.monotonic() < end:
                torch.mm(p, q)
                stream.synchronize()

    def request():
        c = clock()
        with torch.cuda.stream(stream):
            t0.record(stream)
            g.replay()
            t1.record(stream)
        t1.synchronize()
        return t0.elapsed_time(t1), c

    keys = [f"{gap:g}" for gap in a.gaps] + ["cold"]
    order = [k for k in keys for _ in range(a.requests)]
    random.Random(a.seed).shuffle(order)
    samples = {k: [] for k in keys}
    for _ in range(20):  # warm-up: the graph and the GEMM's kernels loaded, clocks settled
        request()
    for i, k in enumerate(order):
        if k == "cold":
            # Idle for longer than the longest gap plus a heat: the GPU has had time to cool.
            spin(max(a.gaps) + a.heat_ms + 10.0)
        else:
            heat(a.heat_ms)
            torch.cuda.synchronize()
            spin(float(k))
        samples[k].append(request())
        if (i + 1) % 500 == 0:
            print(f"[heat] {i + 1}/{len(order)} samples", file=sys.stderr, flush=True)
    return {
        "machine": torch.cuda.get_device_name(0),
        "commit": os.environ.get("BATON_COMMIT", "unknown"),
        "heat_ms": a.heat_ms,
        "requests": a.requests,
        "by_gap_ms": summarize(samples),
    }


def self_test():
    rows = {"cold": [(1.0, 1980), (1.0, 1980), (1.2, 1980)], "0": [(1.5, 1500), (1.6, 1500), (1.4, None)]}
    s = summarize(rows)
    assert s["cold"]["p50"] == 1.0 and s["cold"]["x_cold"] == 1.0, s
    assert s["0"]["p50"] == 1.5 and s["0"]["x_cold"] == 1.5 and s["0"]["clock_mhz"] == 1500, s
    assert s["0"]["n"] == 3 and s["0"]["p99"] == 1.6, s
    assert summarize({"0": [(1.0, None)]})["0"]["x_cold"] is None
    assert pct([], 0.5) is None and pct([3, 1, 2], 0.5) == 2
    print("heat self-test: ok")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None)
    ap.add_argument("--requests", type=int, default=200, help="samples per gap and for the control")
    ap.add_argument("--heat-ms", type=float, default=20.0)
    ap.add_argument("--gaps", default="0,0.25,0.5,1,2,5,10,20")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args(argv)
    if a.self_test:
        self_test()
        return
    a.gaps = [float(g) for g in a.gaps.split(",") if g]
    result = run(a)
    text = json.dumps(result, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
