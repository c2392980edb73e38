#!/usr/bin/env python3
"""A stand-in for ddp_train.py under torchrun, for multigpu.py's dry run without a GPU: --ranks N
processes, each following the control file and writing the same files as a real rank, a step
every 20 ms (5 ms of it in the "collective")."""

import argparse
import json
import multiprocessing
import os
import time


def rank_main(rank, world, control, prefix):
    with open(f"{prefix}.rank{rank}.ready.tmp", "w") as f:
        json.dump({"rank": rank, "pid": os.getpid(), "world": world, "device": "none"}, f)
    os.replace(f"{prefix}.rank{rank}.ready.tmp", f"{prefix}.rank{rank}.ready")
    with open(f"{prefix}.rank{rank}.steps", "w", buffering=1) as log:
        while True:
            try:
                with open(control) as f:
                    state = f.read().strip()
            except OSError:
                state = "pause"
            if state == "stop":
                return
            if state != "run":
                time.sleep(0.005)
                continue
            time.sleep(0.02)
            log.write(json.dumps([round(time.monotonic(), 6), 0.015, 0.005]) + "\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--control", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    procs = [multiprocessing.Process(target=rank_main, args=(r, a.ranks, a.control, a.out)) for r in range(a.ranks)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()


if __name__ == "__main__":
    main()
