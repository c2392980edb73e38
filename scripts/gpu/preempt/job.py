"""A best-effort job for the hand-over probe: G (bf16 8192^3 GEMMs back to back) or T
(ResNet-50 fp32 training, batch 64), run for a number of seconds; prints its rate over the
last `seconds` after a warm-up, and whether a CUDA error ended it."""

import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
from resnet_workload import fp32_training_step  # noqa: E402


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
        step, unit = fp32_training_step(dev), 64.0
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
