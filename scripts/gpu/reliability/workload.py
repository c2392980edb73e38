#!/usr/bin/env python3
"""Deterministic HP / BE workloads for scripts/gpu/reliability/kill_daemon.sh.

  workload.py infer --requests N --out FILE [--progress FILE]
      HP: ResNet-50 fp16 inference, batch 8, N requests on fixed inputs; writes the SHA-256
      of every output (in order) and the latencies.
  workload.py train --steps N --out FILE [--progress FILE]
      BE: ResNet-50 training, batch 32, fp16 autocast, N steps on fixed data; writes the
      SHA-256 of the final weights and every step's loss.

Fixed seeds, deterministic cuDNN/cuBLAS algorithms: a native run and a run under Baton (with
its daemon killed midway) must write identical digests. --progress names a file rewritten
with the number of requests or steps done, so the driver can kill the daemon mid-run.
"""

import argparse
import hashlib
import json
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "apps"))
from resnet_workload import resnet50  # noqa: E402  (the standard layout, no downloads)


def deterministic(seed):
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True)


def progress(path, n):
    if path:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(n))
        os.replace(tmp, path)


def infer(a):
    deterministic(1)
    model = resnet50().cuda().half().eval()
    g = torch.Generator(device="cuda").manual_seed(2)
    x = torch.randn(8, 3, 224, 224, device="cuda", generator=g).half()
    digests, lat = [], []
    with torch.no_grad():
        for i in range(a.requests):
            t0 = time.perf_counter()
            y = model(x + i * 1e-3)
            torch.cuda.synchronize()
            lat.append((time.perf_counter() - t0) * 1e3)
            digests.append(hashlib.sha256(y.float().cpu().numpy().tobytes()).hexdigest())
            progress(a.progress, i + 1)
    lat.sort()
    return {
        "schema": "baton.gpu-reliability-infer/1",
        "requests": a.requests,
        "digest": hashlib.sha256("".join(digests).encode()).hexdigest(),
        "latency_ms": {"p50": lat[len(lat) // 2], "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))]},
    }


def train(a):
    deterministic(3)
    model = resnet50().cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    g = torch.Generator(device="cuda").manual_seed(4)
    x = torch.randn(32, 3, 224, 224, device="cuda", generator=g)
    y = torch.randint(0, 1000, (32,), device="cuda", generator=g)
    losses = []
    t0 = time.perf_counter()
    for step in range(a.steps):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
        progress(a.progress, step + 1)
    torch.cuda.synchronize()
    h = hashlib.sha256()
    for p in model.state_dict().values():
        h.update(p.float().cpu().numpy().tobytes())
    return {
        "schema": "baton.gpu-reliability-train/1",
        "steps": a.steps,
        "digest": h.hexdigest(),
        "losses": losses,
        "seconds": time.perf_counter() - t0,
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("role", choices=["infer", "train"])
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--out", required=True)
    p.add_argument("--progress")
    a = p.parse_args()
    result = infer(a) if a.role == "infer" else train(a)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
