#!/usr/bin/env python3
"""One process, two threads, two streams: does a high-priority CUDA stream protect its work?

  stream_priority.py alone --seconds S --out FILE   # HP thread only
  stream_priority.py both  --seconds S --out FILE   # HP thread + BE thread
  stream_priority.py cpu   --seconds S --out FILE   # HP thread + a pure-Python busy thread (no GPU)

HP: ResNet-50 fp16 batch-8 inference on torch.cuda.Stream(priority=-1), one request every
--period-ms, per-request latency. BE: ResNet-50 training (batch 64, fp16 autocast) on a
priority-0 stream, as fast as it goes. Natively the stream priority barely helps (the GPU
already holds BE's queued work); under `baton run --local` stream priorities become queue
priorities and HPF holds BE back while HP has work. `cpu` measures what another Python thread
alone costs HP (the two share the interpreter lock). HP also reports the median of each
request's launch time (the forward pass's Python and launch calls, before its synchronize):
near its latency, HP is bound by launching, not by the GPU. Writes a JSON summary.
"""

import argparse
import faulthandler
import json
import os
import signal
import threading
import time

import torch
import torch.nn as nn

from resnet_workload import pct, periodic, resnet50


def hp(a, out, ready):
    dev = torch.device("cuda")
    s = torch.cuda.Stream(priority=-1)
    with torch.cuda.stream(s):
        m = resnet50().to(dev).half().eval()
        x = torch.randn(8, 3, 224, 224, device=dev, dtype=torch.half)
        with torch.no_grad():
            for _ in range(20):
                m(x)
            s.synchronize()
            ready.wait()
            launch = []

            def request():
                t0 = time.perf_counter()
                m(x)
                launch.append((time.perf_counter() - t0) * 1e3)

            lat = periodic(request, s.synchronize, a.seconds, a.period_ms)
    out.update(
        requests=len(lat),
        launch_p50_ms=pct(launch, 0.5),
        p50_ms=pct(lat, 0.5),
        p90_ms=pct(lat, 0.9),
        p99_ms=pct(lat, 0.99),
        max_ms=max(lat),
        mean_ms=sum(lat) / len(lat),
    )


def be(a, out, ready, stop):
    dev = torch.device("cuda")
    s = torch.cuda.Stream(priority=0)
    with torch.cuda.stream(s):
        m = resnet50().to(dev).train()
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
        x = torch.randn(64, 3, 224, 224, device=dev)
        y = torch.randint(0, 1000, (64,), device=dev)
        lossf = nn.CrossEntropyLoss()
        steps, t0 = 0, None
        while not stop.is_set():
            with torch.autocast("cuda", dtype=torch.float16):
                loss = lossf(m(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            steps += 1
            if steps == 5:
                s.synchronize()
                t0, s0 = time.monotonic(), steps
                ready.set()
        s.synchronize()
    dt = time.monotonic() - t0 if t0 else 0
    out.update(steps=steps, images_per_s=64 * (steps - s0) / dt if dt else 0.0)


def busy(out, ready, stop):
    """Pure Python, no GPU: what sharing the interpreter lock alone costs HP."""
    n, t0 = 0, time.monotonic()
    ready.set()
    while not stop.is_set():
        n += 1
    out.update(loops_per_s=n / (time.monotonic() - t0))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["alone", "both", "cpu"])
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--period-ms", type=float, default=20)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 PID` prints every thread's stack
    hp_out, be_out = {}, {}
    ready, stop = threading.Event(), threading.Event()
    threads = [threading.Thread(target=hp, args=(a, hp_out, ready))]
    if a.mode == "both":
        threads.append(threading.Thread(target=be, args=(a, be_out, ready, stop)))
    elif a.mode == "cpu":
        threads.append(threading.Thread(target=busy, args=(be_out, ready, stop)))
    else:
        ready.set()
    for t in threads:
        t.start()
    threads[0].join()
    stop.set()
    for t in threads[1:]:
        t.join()
    res = {
        "mode": a.mode,
        "hp": hp_out,
        "be": be_out or None,
        "pid": os.getpid(),
        "baton": bool(os.environ.get("LD_PRELOAD", "").count("baton")),
    }
    json.dump(res, open(a.out, "w"), indent=2)
    print(json.dumps(res))
