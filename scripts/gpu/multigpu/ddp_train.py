"""One rank of a data-parallel training job (torchrun, NCCL): ResNet-50 in bf16 on random data.

Every step ends in DistributedDataParallel's all-reduce, so a rank held back stops its peers at
the next collective. Rank 0 writes one JSON line to --out when done: steps, seconds, steps/s,
and per-step times (its own view; every rank waits for the slowest).
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
from resnet_workload import resnet50  # noqa: E402 (the standard layout, no torchvision)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    if a.seconds <= 0 or a.batch <= 0:
        raise SystemExit("--seconds and --batch must be positive")
    dist.init_process_group("nccl")
    rank, local = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    model = resnet50().cuda().to(torch.bfloat16)
    model = DistributedDataParallel(model, device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(a.batch, 3, 224, 224, device="cuda", dtype=torch.bfloat16)
    y = torch.randint(0, 1000, (a.batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(5):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    torch.cuda.synchronize()
    dist.barrier()
    steps, times = 0, []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        steps += 1
        # Every rank agrees on when to stop, so no rank waits in a collective forever.
        done = torch.tensor([time.perf_counter() - start >= a.seconds], device="cuda", dtype=torch.int32)
        dist.all_reduce(done, op=dist.ReduceOp.MAX)
        if done.item():
            break
    elapsed = time.perf_counter() - start
    if rank == 0:
        with open(a.out, "a") as f:
            f.write(
                json.dumps(
                    {
                        "schema": "baton.multigpu-train/1",
                        "world": dist.get_world_size(),
                        "steps": steps,
                        "seconds": elapsed,
                        "steps_per_s": steps / elapsed,
                        "step_s_p50": sorted(times)[len(times) // 2],
                    }
                )
                + "\n"
            )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
