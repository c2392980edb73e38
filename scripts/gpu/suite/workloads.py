#!/usr/bin/env python3
"""The benchmark suite's workloads (random weights, no downloads).

  workloads.py hp --model resnet50|bert --batch N --rate R --seconds S --out FILE
      latency-critical service: requests with Poisson arrivals at R per second; per-request
      latency (arrival to result, queueing included), p50/p90/p99/p99.9, and the share of
      time it kept the GPU busy (service time / wall time).
  workloads.py be --job train|gemm|cupy --seconds S --out FILE
      best effort as fast as it goes: ResNet-50 training (images/s), a bf16 GEMM flood
      (TFLOP/s), a memory-bound CuPy job (GB/s).
  workloads.py both --model … --job … --seconds S --out FILE
      one process, two threads: HP on a priority −1 stream, BE on a priority 0 stream.

Every run writes one JSON object (and prints it).
"""

import argparse
import faulthandler
import json
import os
import random
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from resnet_workload import resnet50  # noqa: E402


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, round((len(v) - 1) * q))] if v else None


def bert_base():
    layer = nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True, activation="gelu")
    return nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)


def make_hp(model, batch, dev):
    if model == "resnet50":
        m = resnet50().to(dev).half().eval()
        x = torch.randn(batch, 3, 224, 224, device=dev, dtype=torch.half)
    else:
        m = bert_base().to(dev).half().eval()
        x = torch.randn(batch, 128, 768, device=dev, dtype=torch.half)
    return m, x


def hp_loop(a, out, stream=None, ready=None):
    dev = torch.device("cuda")
    ctx = torch.cuda.stream(stream) if stream is not None else torch.cuda.stream(torch.cuda.current_stream())
    with ctx, torch.no_grad():
        m, x = make_hp(a.model, a.batch, dev)
        for _ in range(20):
            m(x)
        torch.cuda.synchronize()
        if ready is not None:
            ready.wait()
        rng = random.Random(1)
        lat, service = [], 0.0
        t_start = time.perf_counter()
        arrival = t_start
        while arrival - t_start < a.seconds:
            arrival += rng.expovariate(a.rate)
            now = time.perf_counter()
            if arrival > now:
                time.sleep(arrival - now)
            t0 = time.perf_counter()
            m(x)
            (stream or torch.cuda.current_stream()).synchronize()
            t1 = time.perf_counter()
            service += t1 - t0
            lat.append((t1 - arrival) * 1e3)
        wall = time.perf_counter() - t_start
    out.update(
        role="hp",
        model=a.model,
        batch=a.batch,
        rate=a.rate,
        requests=len(lat),
        p50_ms=pct(lat, 0.5),
        p90_ms=pct(lat, 0.9),
        p99_ms=pct(lat, 0.99),
        p999_ms=pct(lat, 0.999),
        max_ms=max(lat),
        busy_fraction=service / wall,
        latencies_ms=[round(v, 3) for v in lat],
    )


def be_loop(a, out, stream=None, ready=None, stop=None):
    dev = torch.device("cuda")
    s = stream or torch.cuda.current_stream()
    with torch.cuda.stream(s):
        if a.job == "train":
            torch.backends.cudnn.benchmark = True
            m = resnet50().to(dev).train()
            opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
            x = torch.randn(64, 3, 224, 224, device=dev)
            y = torch.randint(0, 1000, (64,), device=dev)
            lossf = nn.CrossEntropyLoss()

            def step():
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = lossf(m(x), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()

            unit, per_step = "images/s", 64
        elif a.job == "gemm":
            n = 8192
            p = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
            q = torch.randn(n, n, device=dev, dtype=torch.bfloat16)

            def step():
                for _ in range(8):
                    torch.mm(p, q)

            unit, per_step = "TFLOP/s", 8 * 2 * n**3 / 1e12
        else:
            import cupy as cp

            n = 1 << 28  # 1 GiB of float32 each
            cs = cp.cuda.ExternalStream(s.cuda_stream)
            with cs:
                xa = cp.ones(n, dtype=cp.float32)
                ya = cp.zeros(n, dtype=cp.float32)

            def step():
                with cs:
                    for _ in range(4):
                        ya.__iadd__(2.0 * xa)  # 20 bytes per element: x, tmp (w, r), y (r, w)

            unit, per_step = "GB/s", 4 * 20 * n / 1e9
        for _ in range(3):
            step()
        s.synchronize()
        if ready is not None:
            ready.set()
        # The measured time starts after set-up and warm-up (cuDNN autotuning can take longer
        # than a short run).
        end = time.monotonic() + a.seconds
        if stop is not None:
            done = stop.is_set
        elif a.stop_file:
            # Run until the suite says the HP run is over (checked every step).
            done = lambda: os.path.exists(a.stop_file)  # noqa: E731
        else:
            done = lambda: time.monotonic() > end  # noqa: E731
        if a.ready_file:
            open(a.ready_file, "w").close()
        steps, t0 = 0, time.monotonic()
        while not done():
            step()
            steps += 1
            if steps % 4 == 0:
                s.synchronize()  # as real jobs do now and then (loss.item(), logging)
        s.synchronize()
        dt = time.monotonic() - t0
    out.update(role="be", job=a.job, steps=steps, unit=unit, rate=per_step * steps / dt)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["hp", "be", "both"])
    p.add_argument("--model", default="resnet50", choices=["resnet50", "bert"])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--rate", type=float, default=50.0, help="HP requests per second (Poisson)")
    p.add_argument("--job", default="train", choices=["train", "gemm", "cupy"])
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--ready-file", help="BE: create this file once warmed up")
    p.add_argument("--stop-file", help="BE: run until this file exists (instead of --seconds)")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID` prints every thread's stack
    res = {"mode": a.mode, "pid": os.getpid(), "baton": "baton" in os.environ.get("LD_PRELOAD", "")}
    if a.mode == "hp":
        hp = {}
        hp_loop(a, hp)
        res["hp"] = hp
    elif a.mode == "be":
        be = {}
        be_loop(a, be)
        res["be"] = be
    else:
        hp, be = {}, {}
        ready, stop = threading.Event(), threading.Event()
        hs, bs = torch.cuda.Stream(priority=-1), torch.cuda.Stream(priority=0)
        tb = threading.Thread(target=be_loop, args=(a, be, bs, ready, stop))
        tb.start()
        hp_loop(a, hp, hs, ready)
        stop.set()
        tb.join()
        res["hp"], res["be"] = hp, be
    json.dump(res, open(a.out, "w"))
    print(
        json.dumps(
            {
                k: ({kk: vv for kk, vv in v.items() if kk != "latencies_ms"} if isinstance(v, dict) else v)
                for k, v in res.items()
            }
        )
    )


if __name__ == "__main__":
    main()
