"""One rank of a data-parallel training job (torchrun, NCCL): ResNet-50 in bf16 on random data,
driven by a control file so that one job can stay warm through a whole run.

Each step: forward and backward on the rank's own batch (its *compute*), then one NCCL
all-reduce of every gradient at once (its *collective*: the wait for the slowest rank plus the
transfer; the gradients live in one flat buffer, as DDP's bucket views do, so nothing is
copied), then SGD. A rank held back on its GPU shows up as time its peers spend in the
collective. After every step the ranks agree, over a CPU (gloo) group so that no GPU work is
added, on what rank 0 read from --control: `run`, `pause` (no GPU work until it says `run`
again) or `stop`.

Files: --out PREFIX; each rank writes PREFIX.rankR.ready ({"rank", "pid", "world", "device"},
after the warm-up) and appends a line to PREFIX.rankR.steps after every step, `[t_end, compute_s,
collective_s]` with t_end on CLOCK_MONOTONIC (one clock for every process), so that what a rank
did survives its being killed.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
from resnet_workload import resnet50  # noqa: E402 (the standard layout, no torchvision)

STATES = {"run": 0, "pause": 1, "stop": 2}


def read_control(path):
    """What the control file asks for; `pause` while it is missing or half-written."""
    try:
        with open(path) as f:
            return STATES.get(f.read().strip(), STATES["pause"])
    except OSError:
        return STATES["pause"]


def write_atomic(path, text):
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--control", required=True, help="file holding run, pause or stop")
    p.add_argument("--out", required=True, help="prefix of the files each rank writes")
    p.add_argument("--batch", type=int, default=64)
    a = p.parse_args()
    if a.batch <= 0:
        raise SystemExit("--batch must be positive")
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    cpu = dist.new_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    model = resnet50().cuda().to(torch.bfloat16)
    params = [q for q in model.parameters() if q.requires_grad]
    # Every gradient a view into one flat buffer, so one all-reduce covers them all.
    flat = torch.zeros(sum(q.numel() for q in params), device="cuda", dtype=torch.bfloat16)
    offset = 0
    for q in params:
        q.grad = flat[offset : offset + q.numel()].view_as(q)
        offset += q.numel()
    first_grad = params[0].grad
    opt = torch.optim.SGD(params, lr=0.01)
    x = torch.randn(a.batch, 3, 224, 224, device="cuda", dtype=torch.bfloat16)
    y = torch.randint(0, 1000, (a.batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        t0 = time.monotonic()
        opt.zero_grad(set_to_none=False)
        loss_fn(model(x), y).backward()
        torch.cuda.synchronize()
        t1 = time.monotonic()
        if params[0].grad is not first_grad:
            raise SystemExit("the gradients left their flat buffer; the all-reduce would miss them")
        dist.all_reduce(flat, op=dist.ReduceOp.AVG)
        torch.cuda.synchronize()
        t2 = time.monotonic()
        opt.step()
        return t1 - t0, t2 - t1

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    me = {"rank": rank, "pid": os.getpid(), "world": world, "device": torch.cuda.get_device_name()}
    write_atomic(f"{a.out}.rank{rank}.ready", json.dumps(me))
    log = open(f"{a.out}.rank{rank}.steps", "w", buffering=1)
    state = torch.zeros(1, dtype=torch.int32)
    while True:
        state[0] = read_control(a.control) if rank == 0 else 0
        dist.all_reduce(state, op=dist.ReduceOp.MAX, group=cpu)
        s = int(state[0])
        if s == STATES["stop"]:
            break
        if s == STATES["pause"]:
            time.sleep(0.005)
            continue
        compute, coll = step()
        torch.cuda.synchronize()
        log.write(json.dumps([round(time.monotonic(), 6), round(compute, 6), round(coll, 6)]) + "\n")
    log.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
