"""A best-effort job for the hand-over probe: G (bf16 8192^3 GEMMs back to back) or T
(ResNet-50 fp32 training, batch 64), run for a number of seconds; prints its rate over the
last `seconds` after a warm-up, and whether a CUDA error ended it."""

import sys
import time

import torch
from torch import nn
from torchvision.models import resnet50


def main():
    kind, secs = sys.argv[1], float(sys.argv[2])
    dev = torch.device("cuda")
    if kind == "G":
        n = 8192
        p = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        q = torch.randn(n, n, device=dev, dtype=torch.bfloat16)

        def step():
            torch.mm(p, q)

        unit = 2 * n**3 / 1e12
    else:
        torch.backends.cudnn.benchmark = True
        m = resnet50().to(dev).train()
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
        x = torch.randn(64, 3, 224, 224, device=dev)
        y = torch.randint(0, 1000, (64,), device=dev)
        lossf = nn.CrossEntropyLoss()

        def step():
            loss = lossf(m(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        unit = 64.0
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    print("ready", flush=True)
    t0, done, evs = time.monotonic(), 0, []
    try:
        while time.monotonic() - t0 < secs:
            step()
            ev = torch.cuda.Event()
            ev.record()
            evs.append(ev)
            if len(evs) >= 3:
                evs.pop(0).synchronize()
                done += 1
        torch.cuda.synchronize()
        err = "no error"
    except RuntimeError as e:
        err = repr(e)
    el = time.monotonic() - t0
    print(f"job {kind} rate={done * unit / el:.1f}/s error={err}", flush=True)


main()
