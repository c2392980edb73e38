#!/usr/bin/env python3
"""Workloads for the transparency check under contention (scripts/gpu/transparency/run.py).

  python3 workloads.py NAME      prints one JSON line: {"workload": NAME, "digest": ...}

Each workload is deterministic natively (fixed seeds, deterministic algorithms), runs long
enough on the GPU (a second or more of launches) for a scheduler to suspend and resume it many
times, and digests everything it computed. The digest is taken from values copied to the host
only after the program's own synchronization, so a command run out of order or a buffer reused
too early changes it.

  train-side      ResNet-18 (10 classes) SGD on a side stream, inputs made on the default
                  stream; the losses gathered on the default stream after torch.cuda.synchronize()
  train-side-long the same at a training job's size (batch 64 at 112x112, 30 steps, momentum
                  and weight decay), long enough to be suspended and resumed at many points
  train-default   ResNet-18 SGD on the default stream, batches copied from pinned memory with
                  non_blocking=True, loss.item() every step
  infer-side      ResNet-50 fp16 batch-8 inference on a side stream, inputs in and outputs out
                  through pinned memory, each request waited for with an event
  graph           ResNet-50 fp16 batch-8 captured with torch.cuda.graph (global capture mode),
                  replayed per request with new inputs copied into the static input
  hf-gpt2         a Hugging Face GPT-2 (random weights, fp16): greedy generate, 48 new tokens
  multistream     three streams with events, record_stream, cross-stream reuse of the caching
                  allocator's blocks, a high-priority stream, pinned copies reused after events
  cupy            CuPy: matrix products and reductions on two streams joined by events, a raw
                  kernel, pinned asynchronous copies
  jax             JAX: an MLP trained by jitted SGD steps (XLA command buffers, cuGraphLaunch),
                  then a jitted bf16 8192³ product chain (XLA's cuBLAS or cuBLASLt, by dlsym)
  triton          Triton: a vector kernel and a blocked matrix product, accumulated in a loop
  gemm            PyTorch GEMMs of the shapes and types Baton splits (bf16 8192³ and 4096³,
                  fp16, fp32 with and without TF32, transposed operands, an operand at an
                  offset, a batched product, sizes no multiple of 128), and cuBLASLt's: Linear
                  layers with a bias (4096 and 8192 wide) forward and backward (the bias's
                  gradient an epilogue Baton never splits), GELU fused with the bias
                  (_addmm_activation), on a side stream, each fed by the last

  python3 workloads.py serve-graph SEED SECONDS [RATE]

is the latency-critical service of run.py's suspended-graph role: ResNet-50 fp16 batch 8
captured as one CUDA graph, replayed once per request at Poisson arrivals (RATE a second,
default 100, seeded), each request synchronized. It prints "ready" once its graph is captured, and at SIGTERM
or after SECONDS one JSON line: {"role": "serve-graph", "requests": N}.
"""

import hashlib
import json
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("XLA_FLAGS", "--xla_gpu_deterministic_ops=true --xla_gpu_autotune_level=0")


class Digest:
    def __init__(self):
        self.h = hashlib.sha256()

    def add(self, *arrays):
        for a in arrays:
            self.h.update(memoryview(a).tobytes() if isinstance(a, (bytes, bytearray)) else a.tobytes())

    def hex(self):
        return self.h.hexdigest()[:16]


def torch_setup():
    import torch

    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True)
    return torch


def host(t):
    """A tensor's bytes, once it is on the host."""
    return t.detach().float().contiguous().numpy()


def train_side(batch=32, size=64, steps=10, decay=0.0):
    torch = torch_setup()
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).cuda()
    x = torch.randn(batch, 3, size, size, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=decay)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    losses = []
    with torch.cuda.stream(s):
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
    torch.cuda.synchronize()
    d = Digest()
    d.add(host(torch.stack(losses).cpu()), host(model.fc.weight.cpu()))
    return d.hex()


def train_side_long():
    return train_side(batch=64, size=112, steps=30, decay=1e-4)


def train_default():
    torch = torch_setup()
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).cuda()
    g = torch.Generator().manual_seed(1)
    batches = [
        (torch.randn(32, 3, 64, 64, generator=g).pin_memory(), torch.randint(0, 10, (32,), generator=g).pin_memory())
        for _ in range(4)
    ]
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    d = Digest()
    for step in range(12):
        xb, yb = batches[step % len(batches)]
        x, y = xb.cuda(non_blocking=True), yb.cuda(non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        d.add(torch.tensor([loss.item()]).numpy())
    d.add(host(model.fc.weight.cpu()))
    return d.hex()


def resnet50_half():
    torch = torch_setup()
    import torchvision

    torch.manual_seed(0)
    return torch, torchvision.models.resnet50(num_classes=1000).cuda().half().eval()


def infer_side():
    torch, model = resnet50_half()
    g = torch.Generator().manual_seed(2)
    inputs = [torch.randn(8, 3, 224, 224, generator=g).half().pin_memory() for _ in range(4)]
    out = torch.empty(8, 1000, dtype=torch.half).pin_memory()
    s = torch.cuda.Stream()
    d = Digest()
    with torch.no_grad(), torch.cuda.stream(s):
        for i in range(24):
            x = inputs[i % len(inputs)].cuda(non_blocking=True)
            out.copy_(model(x), non_blocking=True)
            done = torch.cuda.Event()
            done.record(s)
            done.synchronize()
            d.add(host(out))
    return d.hex()


def captured(torch, model, static_x):
    """`model` on `static_x` warmed up on a side stream, then captured with torch.cuda.graph:
    the graph and its static output."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(s)
    cg = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(cg):
        static_y = model(static_x)
    return cg, static_y


def graph():
    torch, model = resnet50_half()
    g = torch.Generator().manual_seed(3)
    inputs = [torch.randn(8, 3, 224, 224, generator=g).half().cuda() for _ in range(4)]
    static_x = inputs[0].clone()
    cg, static_y = captured(torch, model, static_x)
    d = Digest()
    for i in range(24):
        static_x.copy_(inputs[i % len(inputs)])
        cg.replay()
        d.add(host(static_y.cpu()))
    return d.hex()


def hf_gpt2():
    torch = torch_setup()
    import transformers

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=12, n_embd=768, n_head=12, vocab_size=50257)
    model = transformers.GPT2LMHeadModel(cfg).cuda().half().eval()
    prompt = torch.randint(0, cfg.vocab_size, (1, 64), generator=torch.Generator().manual_seed(4)).cuda()
    d = Digest()
    with torch.no_grad():
        for _ in range(2):
            out = model.generate(
                prompt,
                attention_mask=torch.ones_like(prompt),
                max_new_tokens=48,
                min_new_tokens=48,
                do_sample=False,
                pad_token_id=0,
            )
            d.add(out.cpu().numpy())
        d.add(host(model(out).logits[0, -1].cpu()))
    return d.hex()


def multistream():
    torch = torch_setup()
    torch.manual_seed(0)
    lo, hi = torch.cuda.Stream(), torch.cuda.Stream(priority=-1)
    third = torch.cuda.Stream()
    w = torch.randn(1024, 1024, device="cuda")
    pinned = torch.empty(1024, 1024).pin_memory()
    d = Digest()
    acc = torch.zeros(1024, 1024, device="cuda")
    lo.wait_stream(torch.cuda.current_stream())
    for i in range(30):
        with torch.cuda.stream(lo):
            a = torch.randn(1024, 1024, device="cuda") @ w  # allocated on lo
            a = torch.tanh(a) * (i + 1)
        hi.wait_stream(lo)
        with torch.cuda.stream(hi):
            b = a @ w.t()  # a used on hi
            a.record_stream(hi)
        del a  # its block waits for hi
        third.wait_stream(hi)
        with torch.cuda.stream(third):
            c = torch.empty(1024, 1024, device="cuda")  # may reuse blocks freed on third
            c.copy_(b).mul_(0.5)
            b.record_stream(third)
            pinned.copy_(c, non_blocking=True)  # into pinned memory, reused
            ev = torch.cuda.Event()
            ev.record(third)
        del b
        ev.synchronize()
        d.add(pinned.numpy())
        torch.cuda.current_stream().wait_stream(third)
        acc += c
        c.record_stream(torch.cuda.current_stream())
    torch.cuda.synchronize()
    d.add(host(acc.cpu()))
    return d.hex()


def cupy():
    import cupy as cp

    raw = cp.RawKernel(
        r"""
    extern "C" __global__ void scale_add(const float* x, float* y, float a, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) y[i] = a * x[i] + y[i];
    }""",
        "scale_add",
    )
    rs = cp.random.RandomState(seed=3)
    a = rs.standard_normal((1024, 1024), dtype=cp.float32)
    b = rs.standard_normal((1024, 1024), dtype=cp.float32)
    s1, s2 = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    import numpy as np

    pinned = cp.cuda.alloc_pinned_memory(1024 * 4)
    host_out = np.frombuffer(pinned, np.float32, 1024)
    d = Digest()
    y = cp.zeros(1 << 20, dtype=cp.float32)
    x = cp.arange(1 << 20, dtype=cp.float32)
    for i in range(40):
        with s1:
            c = a @ b
            a = cp.tanh(c * 1e-2) + a * 0.5
            e = s1.record()
        s2.wait_event(e)
        with s2:
            total = (a * a).sum(axis=0)
            raw(((1 << 20) // 256,), (256,), (x, y, cp.float32(0.5 + i), cp.int32(1 << 20)))
            total.get(stream=s2, out=host_out)
        s2.synchronize()
        d.add(host_out.copy())
    cp.cuda.Device().synchronize()
    d.add(cp.asnumpy(a), cp.asnumpy(y))
    return d.hex()


def gemm():
    torch = torch_setup()

    torch.manual_seed(0)
    g = torch.Generator(device="cuda").manual_seed(5)

    def rand(*shape, dtype=torch.bfloat16):
        return torch.randn(*shape, device="cuda", dtype=dtype, generator=g)

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    d = Digest()
    outs = []
    with torch.cuda.stream(s):
        for dtype, n, reps in [(torch.bfloat16, 8192, 4), (torch.bfloat16, 4096, 6), (torch.float16, 4096, 6)]:
            a, b = rand(n, n, dtype=dtype), rand(n, n, dtype=dtype)
            for _ in range(reps):
                c = a @ b
                a = (c * (1.0 / n)).to(dtype)
            outs.append(a)
            outs.append(b.t() @ a)
            outs.append(a[1:] @ b[:, 3:])
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            a, b = rand(4096, 3000, dtype=torch.float32), rand(3000, 5000, dtype=torch.float32)
            outs.append(a @ b)
        torch.backends.cuda.matmul.allow_tf32 = False
        x, w = rand(16, 1024, 2048), rand(16, 2048, 1024)
        outs.append(torch.bmm(x, w))
        lin = torch.nn.Linear(4096, 4096, device="cuda", dtype=torch.bfloat16)
        outs.append(lin(rand(2048, 4096)).detach())
        for width, tokens in [(8192, 8192), (4096, 16384)]:
            lin = torch.nn.Linear(width, width, device="cuda", dtype=torch.bfloat16)
            x = rand(tokens, width).requires_grad_()
            for _ in range(3):
                y = lin(x)
                y.float().square().mean().backward()
                outs.append(y.detach())
            outs += [x.grad, lin.weight.grad, lin.bias.grad]
            outs.append(torch._addmm_activation(lin.bias, x.detach(), lin.weight.t(), use_gelu=True))
    torch.cuda.synchronize()
    for o in outs:
        d.add(host(o.cpu()))
    return d.hex()


def jax():
    import jax as jx
    import jax.numpy as jnp
    import numpy as np

    k1, k2, k3 = jx.random.split(jx.random.PRNGKey(0), 3)
    params = [jx.random.normal(k1, (512, 1024)) * 0.03, jx.random.normal(k2, (1024, 10)) * 0.03]
    x = jx.random.normal(k3, (256, 512))
    labels = jnp.arange(256) % 10

    def loss(p, x):
        h = jnp.tanh(x @ p[0])
        logits = h @ p[1]
        return -jnp.mean(jx.nn.log_softmax(logits)[jnp.arange(256), labels])

    @jx.jit
    def step(p, x):
        value, g = jx.value_and_grad(loss)(p, x)
        return [w - 0.1 * gw for w, gw in zip(p, g, strict=True)], value

    d = Digest()
    for _ in range(60):
        params, value = step(params, x)
        d.add(np.asarray(value))
    for p in params:
        d.add(np.asarray(p))
    big = jx.random.normal(k1, (8192, 8192), dtype=jnp.bfloat16)
    chain = jx.jit(lambda a, b: ((a @ b) * (1.0 / 8192)).astype(jnp.bfloat16))
    a = big
    for _ in range(6):
        a = chain(a, big)
        d.add(np.asarray(a.astype(jnp.float32)))
    return d.hex()


def triton():
    torch = torch_setup()
    import triton as tr
    import triton.language as tl

    @tr.jit
    def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=mask) * 0.5 + tl.load(y + offs, mask=mask), mask=mask)

    @tr.jit
    def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            acc += tl.dot(
                tl.load(a + rm[:, None] * K + (k + rk)[None, :]), tl.load(b + (k + rk)[:, None] * N + rn[None, :])
            )
        tl.store(c + rm[:, None] * N + rn[None, :], acc)

    torch.manual_seed(0)
    n, M = 1 << 20, 512
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    a = torch.randn(M, M, device="cuda", dtype=torch.float16)
    b = torch.randn(M, M, device="cuda", dtype=torch.float16)
    c = torch.empty(M, M, device="cuda", dtype=torch.float32)
    d = Digest()
    for i in range(40):
        add_kernel[(tr.cdiv(n, 1024),)](x, y, y, n, BLOCK=1024)
        matmul_kernel[(M // 64, M // 64)](a, b, c, M, M, M, BM=64, BN=64, BK=32)
        a = (c * 1e-3).half()
        if i % 10 == 9:
            d.add(host(y[:4096].cpu()), host(c[:8].cpu()))
    torch.cuda.synchronize()
    d.add(host(c.cpu()))
    return d.hex()


def serve_graph(seed, seconds, rate=100.0):
    """The suspended-graph role's service (see the module documentation)."""
    import random
    import signal
    import time

    torch, model = resnet50_half()
    cg, _ = captured(torch, model, torch.randn(8, 3, 224, 224, device="cuda").half())
    torch.cuda.synchronize()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print("ready", flush=True)
    rng = random.Random(seed)
    requests, end = 0, time.monotonic() + seconds
    due = time.monotonic()
    while not stop and time.monotonic() < end:
        due += rng.expovariate(rate)
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        cg.replay()
        torch.cuda.current_stream().synchronize()
        requests += 1
    print(json.dumps({"role": "serve-graph", "requests": requests}), flush=True)


WORKLOADS = {
    "train-side": train_side,
    "train-side-long": train_side_long,
    "train-default": train_default,
    "infer-side": infer_side,
    "graph": graph,
    "hf-gpt2": hf_gpt2,
    "multistream": multistream,
    "cupy": cupy,
    "jax": jax,
    "triton": triton,
    "gemm": gemm,
}

if __name__ == "__main__":
    name = sys.argv[1]
    if name == "serve-graph":
        serve_graph(int(sys.argv[2]), float(sys.argv[3]), *(float(a) for a in sys.argv[4:5]))
        sys.exit(0)
    print(json.dumps({"workload": name, "digest": WORKLOADS[name]()}), flush=True)
