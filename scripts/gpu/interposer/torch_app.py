"""PyTorch workloads for transparency and overhead checks.

  python3 torch_app.py infer        ResNet-50 fp16 batch-8 inference: checksum of the logits
  python3 torch_app.py train        ResNet-50 training steps (SGD): checksum of loss and weights
  python3 torch_app.py bench-infer  seconds per inference (median of timed iterations)
  python3 torch_app.py bench-train  seconds per training step
Random weights and inputs from fixed seeds; deterministic algorithms, so two native runs print
the same checksum. The last stdout line is JSON.
"""

import hashlib
import json
import os
import statistics
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torchvision  # noqa: E402

torch.backends.cudnn.benchmark = False
torch.backends.cudnn.deterministic = True
torch.use_deterministic_algorithms(True)


def digest(*tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().float().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def model(train):
    torch.manual_seed(0)
    m = torchvision.models.resnet50(weights=None).cuda()
    if not train:
        m = m.half().eval()
    return m


def inputs(batch, half):
    g = torch.Generator(device="cpu").manual_seed(1)
    x = torch.randn(batch, 3, 224, 224, generator=g)
    x = x.half() if half else x
    return x.cuda()


def infer(iters=3):
    m, x = model(False), inputs(8, True)
    with torch.no_grad():
        for _ in range(iters):
            y = m(x)
    torch.cuda.synchronize()
    return {"checksum": digest(y)}


def train(steps=3):
    m, x = model(True), inputs(8, False)
    target = torch.arange(8, device="cuda") % 1000
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(m(x), target)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    return {"checksum": digest(loss, m.conv1.weight, m.fc.weight), "loss": float(loss)}


def bench(train_mode, iters=200, warmup=20):
    # A fixed algorithm choice: autotuning may pick different kernels in different processes,
    # which would swamp the difference being measured.
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(False)
    m, x = model(train_mode), inputs(8, not train_mode)
    target = torch.arange(8, device="cuda") % 1000
    opt = torch.optim.SGD(m.parameters(), lr=0.01) if train_mode else None

    def step():
        if train_mode:
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(m(x), target).backward()
            opt.step()
        else:
            with torch.no_grad():
                m(x)
        torch.cuda.synchronize()

    for _ in range(warmup):
        step()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "times_s": times}


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "infer"
    out = {"infer": infer, "train": train, "bench-infer": lambda: bench(False), "bench-train": lambda: bench(True)}[
        mode
    ]()
    out["app"] = f"torch-{mode}"
    print(json.dumps(out))
