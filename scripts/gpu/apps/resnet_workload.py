#!/usr/bin/env python3
"""HP / BE workloads for scripts/gpu/two_process/run.sh.

  resnet_workload.py infer --seconds S --out FILE   # HP: ResNet-50 fp16, batch 8, one request
                                                    # every --period-ms; per-request latency
  resnet_workload.py train --seconds S --out FILE   # BE: ResNet-50 training, batch 64, fp16 autocast

Both use the default CUDA stream (as most PyTorch programs do) and write a JSON summary.
The model is defined here (no torchvision, no downloads): the standard ResNet-50 layout.
"""

import argparse
import json
import os
import time

import torch
import torch.nn as nn


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * 4
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, stride, 1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.skip = None
        if stride != 1 or cin != cout:
            self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.body(x) + (x if self.skip is None else self.skip(x)))


def resnet50(classes=1000):
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def fp32_training_step(dev, batch=64):
    """ResNet-50 fp32 training at `batch` on `dev` (SGD, cuDNN autotuned): returns one step as a
    closure. The matrix's training job (T) and the hand-over probe's both run it."""
    torch.backends.cudnn.benchmark = True
    m = resnet50().to(dev).train()
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (batch,), device=dev)
    lossf = nn.CrossEntropyLoss()

    def step():
        loss = lossf(m(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, round((len(v) - 1) * q))]


def periodic(request, sync, seconds, period_ms):
    """Runs `request` then `sync` once every `period_ms` for `seconds` (a late request starts
    at once); each request's latency in ms."""
    lat = []
    end = time.monotonic() + seconds
    nxt = time.monotonic()
    while time.monotonic() < end:
        now = time.monotonic()
        if now < nxt:
            time.sleep(nxt - now)
        t0 = time.perf_counter()
        request()
        sync()
        lat.append((time.perf_counter() - t0) * 1e3)
        nxt = max(nxt + period_ms / 1e3, time.monotonic())
    return lat


def infer(a):
    dev = torch.device("cuda")
    m = resnet50().to(dev).half().eval()
    x = torch.randn(8, 3, 224, 224, device=dev, dtype=torch.half)
    with torch.no_grad():
        for _ in range(20):  # warm-up, not measured
            m(x)
        torch.cuda.synchronize()
        lat = periodic(lambda: m(x), torch.cuda.synchronize, a.seconds, a.period_ms)
    out = {
        "role": "hp",
        "requests": len(lat),
        "p50_ms": pct(lat, 0.5),
        "p90_ms": pct(lat, 0.9),
        "p99_ms": pct(lat, 0.99),
        "max_ms": max(lat),
        "mean_ms": sum(lat) / len(lat),
        "period_ms": a.period_ms,
        "pid": os.getpid(),
    }
    json.dump(out, open(a.out, "w"), indent=2)
    print(json.dumps(out))


def train(a):
    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    m = resnet50().to(dev).train()
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    x = torch.randn(64, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (64,), device=dev)
    lossf = nn.CrossEntropyLoss()
    steps, t_start = 0, None
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = lossf(m(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        steps += 1
        if steps == 5:  # warm-up done
            torch.cuda.synchronize()
            t_start, s0 = time.monotonic(), steps
    torch.cuda.synchronize()
    dt = time.monotonic() - (t_start or end)
    out = {
        "role": "be",
        "steps": steps,
        "steps_per_s": (steps - s0) / dt if t_start else 0.0,
        "images_per_s": 64 * (steps - s0) / dt if t_start else 0.0,
        "pid": os.getpid(),
    }
    json.dump(out, open(a.out, "w"), indent=2)
    print(json.dumps(out))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["infer", "train"])
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--period-ms", type=float, default=20)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    infer(a) if a.mode == "infer" else train(a)
