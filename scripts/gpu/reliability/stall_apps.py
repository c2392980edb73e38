#!/usr/bin/env python3
"""The two programs of stall.sh.

stall_apps.py be --seconds S --out FILE      bf16 4096^3 GEMMs, four per step, for S seconds;
                                             FILE: {"log": [[t, steps], ...]} (monotonic s)
stall_apps.py hang --seconds S --out FILE    one kernel that spins for S seconds on one SM
                                             (a hung kernel that ends); FILE: its launch and
                                             completion times
"""

import argparse
import json
import time

import torch


def be(a):
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    log, steps, end = [], 0, time.monotonic() + a.seconds
    while time.monotonic() < end:
        for _ in range(4):
            torch.mm(x, y)
        torch.cuda.synchronize()
        steps += 1
        log.append([round(time.monotonic(), 4), steps])
    json.dump({"log": log}, open(a.out, "w"))


def hang(a):
    import cupy

    spin = cupy.RawKernel(
        r"""
extern "C" __global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}""",
        "spin",
    )
    rate = cupy.cuda.runtime.getDeviceProperties(0)["clockRate"] * 1e3  # Hz
    spin((1,), (1,), (cupy.int64(1000),))  # compiles and loads on the first call: a short one
    cupy.cuda.runtime.deviceSynchronize()
    t0 = time.monotonic()
    spin((1,), (1,), (cupy.int64(a.seconds * rate),))
    launched = time.monotonic()
    cupy.cuda.runtime.deviceSynchronize()
    json.dump(
        {"t_launch": t0, "t_launched": launched, "t_done": time.monotonic(), "seconds": a.seconds}, open(a.out, "w")
    )


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("role", choices=["be", "hang"])
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    be(a) if a.role == "be" else hang(a)
