#!/usr/bin/env python3
"""One best-effort job or an idle service, for `run.sh` (several jobs that yield by their time
slice on one GPU):

  job.py flood SECONDS     bf16 8192^3 GEMMs (~1.7 ms each on an H200), four in flight
  job.py small SECONDS     fp16 1024^3 GEMMs (~10 us each), sixty-four in flight
  job.py idle SECONDS      a CUDA context that launches one tiny kernel, then only waits

Prints one JSON line: the work done per second of the measured window (after a 2 s warm-up)."""

import json
import sys
import time

import torch


def main():
    kind, seconds = sys.argv[1], float(sys.argv[2])
    dev = torch.device("cuda")
    if kind == "idle":
        torch.ones(1, device=dev).add_(1)
        torch.cuda.synchronize()
        print(json.dumps({"kind": kind, "ready": True}), flush=True)
        time.sleep(seconds)
        return
    n, depth, dtype = {"flood": (8192, 4, torch.bfloat16), "small": (1024, 64, torch.half)}[kind]
    a = torch.randn(n, n, device=dev, dtype=dtype)
    b = torch.randn(n, n, device=dev, dtype=dtype)
    events = []

    seen = []

    def run_for(s):
        done, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < s:
            torch.mm(a, b)
            ev = torch.cuda.Event()
            ev.record()
            events.append(ev)
            if len(events) >= depth:
                events.pop(0).synchronize()
                seen.append(time.time())
                done += 1
        torch.cuda.synchronize()
        events.clear()
        return done, time.monotonic() - t0

    run_for(2.0)
    seen.clear()
    done, dt = run_for(seconds)
    print(
        json.dumps(
            {
                "kind": kind,
                "tflops": round(2 * n**3 * done / dt / 1e12, 2),
                "kernels": done,
                # When each kernel's completion was seen (Unix time, s): which job ran when.
                "seen": [round(t, 5) for t in seen],
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
