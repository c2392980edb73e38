#!/usr/bin/env python3
"""The co-location matrix's GPU workers: long-lived processes that matrix.py drives, one JSON
object per line (commands on stdin, answers on the process's original stdout; whatever the
libraries print goes to stderr).

  services.py hp     the services Rg, Dg and Be, loaded, captured and warmed up
  services.py be     the jobs G and T, loaded and warmed up
  services.py both   all of them in one process (setup P): the services on a high-priority
                     stream from the main thread, the job in a thread on a normal-priority
                     stream; MATRIX_BE_DEVICE=cuda:1 puts the job's work on a second GPU, so
                     the two share the process (interpreter, CPUs, runtime) and not the GPU

Services (random weights, nothing downloaded), each request served as serving engines do:
  Rg  ResNet-50 fp16, batch 8, captured once as one CUDA graph and replayed per request
  Dg  a GPT-2-shaped decoder (MATRIX_DG_SHAPE="layers,width,heads", default 36,1280,20: the
      shape of GPT-2-large) fp16, batch 4, over a static KV cache: a 32-token prompt (one
      prefill graph), then 63 greedy steps (one replay of the step graph each); the sampled
      tokens are copied to the host after every step, as a server streams them. Every one of
      the 64 tokens is a sample (inter-token latency)
  Be  BERT-base fp16, batch 1, sequence 128, eager: the launch-bound control
  Mm, Mg (lab) one bf16 GEMM a request, launched plainly (Mm) or as a one-node graph (Mg)
Jobs: G bf16 8192x8192x8192 GEMMs back to back (unit: TFLOP); T ResNet-50 fp32 training,
batch 64, SGD (unit: images); K, for the lab only, a one-thread clock spin of 3.4 M cycles
(about G's 1.7 ms a kernel) that reads and writes no memory (unit: spins): what a job's context
costs a service time-sliced apart from what its data does to the caches. MATRIX_SERVICES and
MATRIX_JOBS (comma-separated names) build only those, for drivers that need fewer (the
multi-GPU run: Rg and G).

Commands and answers (times are CLOCK_MONOTONIC seconds, one clock for every process):
  {"cmd": "time", "hp": H, "n": N} -> {"ms": [...]}
      N requests back to back after a warm-up, each one's time alone
  {"cmd": "serve", "hp": H, "rate": R, "n": N, "seed": S, "cap_s": C}
      -> {"lat_ms": [...], "censored": K, "t_first": T, "t_last": T, "requests": Q, "seed": S,
          "rate": R[, "gpu_ms": [...], "gpu_gap_ms": [...][, "gpu_pre_ms": [...]]]}
      open loop: N requests (Dg: N tokens, in requests of 64) planned at Poisson arrivals of
      rate R per second (exponential gaps from the seed), the first 20 ms from now; a request
      starts at its planned arrival or, when the service is behind, as soon as the one before
      it ends. Latency counts from the planned arrival, so queueing is in it; a Dg token after
      a request's first counts from the token before it. Past C seconds from the first
      arrival, requests not yet started are not run: each one already planned by then is one
      sample of (then - its planned arrival), a lower bound, counted in `censored`. With
      MATRIX_GPU_TIME=1, Rg's and Be's requests' spans on the GPU too (GpuSpan). For the lab,
      MATRIX_L2_FLUSH_MB=M writes M MiB on the stream before each Rg request's work (outside
      its span): the request then finds the L2 cache as a job's data would leave it, and
      MATRIX_SYNC=poll waits for each Rg request by polling an event recorded after its work
      instead of synchronizing with the stream
  {"cmd": "busy", "hp": H, "rate": R, "n": N} -> {"busy": F, "kernel_s": K, "wall_s": W}
      the service's GPU-busy share at that rate: the union of its kernel and copy time over
      wall time, from the CUDA activity the profiler records (run it in a process of its own:
      the profiler slows later launches of the process it ran in)
  {"cmd": "flood", "be": J} -> {"t_start": T}     the job runs in a thread until "stop"
  {"cmd": "stop"} -> {"log": [[t, units], ...], "unit": U}   one entry per completed step
  {"cmd": "release"} -> {"reserved_mib": [before, after]}   the allocator's cache emptied
  {"cmd": "quit"}
"""

import faulthandler
import gc
import json
import os
import resource
import sys
import threading
import time

ROLE = sys.argv[1] if len(sys.argv) > 1 else ""
if ROLE not in ("hp", "be", "both"):
    sys.exit(__doc__)

# The protocol keeps the original stdout; whatever the libraries print goes to stderr.
PROTO = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
faulthandler.enable()

# CPU placement, set before CUDA starts any thread (they inherit it): the matrix gives each
# role cores of its own.
_cpus = os.environ.get("MATRIX_CPUS")
if _cpus:
    os.sched_setaffinity(0, {int(c) for c in _cpus.split(",")})

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from analyze import arrivals  # noqa: E402
from resnet_workload import fp32_training_step, resnet50  # noqa: E402

DEV = torch.device("cuda")
# Tokens of a Dg request, and of its prompt.
DG_TOKENS, DG_PROMPT, DG_BATCH = 64, 32, 4
# The first planned arrival, from the command.
LEAD_S = 0.02


def answer(obj):
    PROTO.write(json.dumps(obj) + "\n")
    PROTO.flush()


def wait_until(t):
    """Returns at monotonic time T: asleep until the last 1.5 ms, then awake (yielding the
    CPU), so the request starts on time rather than a scheduler tick late."""
    while True:
        left = t - time.monotonic()
        if left <= 0:
            return
        time.sleep(left - 0.0015 if left > 0.002 else 0)


class Block(nn.Module):
    """One pre-norm decoder layer over a static KV cache of `ctx` positions."""

    def __init__(self, width, heads, batch, ctx):
        super().__init__()
        self.heads, self.dh = heads, width // heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
        self.register_buffer("k", torch.zeros(batch, heads, ctx, self.dh))
        self.register_buffer("v", torch.zeros(batch, heads, ctx, self.dh))

    def forward(self, x, pos, mask):
        b, t, w = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, self.dh).permute(2, 0, 3, 1, 4)
        self.k.index_copy_(2, pos, k)
        self.v.index_copy_(2, pos, v)
        a = F.scaled_dot_product_attention(q, self.k, self.v, attn_mask=mask)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, w))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Decoder(nn.Module):
    """GPT-2's layout with a static KV cache: `forward(tokens, pos)` writes the cache at
    positions `pos` and returns the greedy next token of each sequence."""

    def __init__(self, layers, width, heads, batch, ctx, vocab=50257):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(ctx, width)
        self.blocks = nn.ModuleList(Block(width, heads, batch, ctx) for _ in range(layers))
        self.lnf = nn.LayerNorm(width)
        self.register_buffer("cols", torch.arange(ctx))

    def forward(self, tokens, pos):
        x = self.wte(tokens) + self.wpe(pos)[None]
        mask = (self.cols[None, :] <= pos[:, None])[None, None]
        for blk in self.blocks:
            x = blk(x, pos, mask)
        return (self.lnf(x[:, -1]) @ self.wte.weight.T).argmax(-1)


def capture(stream, fn):
    """`fn` captured as one CUDA graph (after warm-up runs on STREAM), as serving engines do:
    captured on PyTorch's own capture stream, replayed on the service's."""
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    return g


def note(what):
    """A progress line on stderr (the matrix's workers.log): where a worker that fails got to."""
    print(f"[services {ROLE} {os.getpid()}] {what}", file=sys.stderr, flush=True)


class Service:
    """A service: `request(on_token)` serves one request on its stream and calls `on_token()`
    when each token (one for Rg and Be) has reached the host; `tokens` per request. `keep`
    holds what its graphs read: a graph records only addresses, so the model and the inputs it
    was captured from must outlive it, or the allocator hands their memory to someone else
    (in one process, the job: its first step after a replay then faults). `span` times a
    one-token request's work on the GPU when MATRIX_GPU_TIME=1."""

    def __init__(self, request, tokens, keep=(), span=None):
        self.request, self.tokens, self.keep, self.span = request, tokens, keep, span


class GpuSpan:
    """With MATRIX_GPU_TIME=1, each request's span on the GPU (ms): from an event recorded on
    its stream before its work to one recorded after it, read once the host has the result.
    It starts once the service's context has the GPU and everything before it on the stream
    is done, so it leaves out a hand-over at the request's start and keeps whatever the GPU
    does to the request inside it (the job's context taking the GPU between two kernels).
    With it, `gap_ms`: on the GPU, from the end of the request before to this one's start
    (its host's turnaround when it queued). For the lab, MATRIX_GPU_START=1 also waits on the
    host for the request's first event, polling it, and keeps `pre_ms`: from the host's call
    to the GPU's start of the request's work (a hand-over at its start, or a slow launch)."""

    ON = os.environ.get("MATRIX_GPU_TIME") == "1"
    POLL = ON and os.environ.get("MATRIX_GPU_START") == "1"

    def __init__(self):
        self.pairs = [[torch.cuda.Event(enable_timing=True) for _ in range(2)] for _ in range(2)]
        self.t_call = None
        self.reset()

    def reset(self):
        self.ms, self.gap_ms, self.pre_ms = [], [], []
        self.k = 0

    def start(self, stream):
        if self.ON:
            self.t_call = time.monotonic()
            self.pairs[self.k % 2][0].record(stream)

    def stop(self, stream):
        if self.ON:
            self.pairs[self.k % 2][1].record(stream)

    def wait_start(self):
        """After the request's work is launched, with MATRIX_GPU_START=1: poll its first event."""
        if self.POLL:
            begin = self.pairs[self.k % 2][0]
            while not begin.query():
                pass
            self.pre_ms.append(round((time.monotonic() - self.t_call) * 1e3, 4))

    def read(self):
        if self.ON:
            begin, end = self.pairs[self.k % 2]
            self.ms.append(round(begin.elapsed_time(end), 4))
            prev_end = self.pairs[(self.k + 1) % 2][1]
            self.gap_ms.append(None if self.k == 0 else round(prev_end.elapsed_time(begin), 4))
            self.k += 1

    def fields(self):
        """What a measurement's answer carries from it."""
        if not self.ON:
            return {}
        return {"gpu_ms": self.ms, "gpu_gap_ms": self.gap_ms, **({"gpu_pre_ms": self.pre_ms} if self.POLL else {})}


def one_request(stream, span, work, on_token, before=None, done=None):
    """Serves a one-token request on STREAM: `before` (outside its span), then `work` within
    `span`; waits for it (polling the event `done`, recorded after the work, when given; else
    synchronizing the stream) and calls `on_token`."""
    with torch.cuda.stream(stream):
        if before is not None:
            before()
        span.start(stream)
        work()
        span.stop(stream)
        if done is not None:
            done.record(stream)
    span.wait_start()
    if done is not None:
        while not done.query():
            pass
    else:
        stream.synchronize()
    on_token()
    span.read()


def wanted(var, names):
    """The names of NAMES that the comma-separated list in VAR asks for (all when unset)."""
    asked = [n for n in os.environ.get(var, ",".join(names)).split(",") if n]
    bad = [n for n in asked if n not in names]
    if bad:
        raise SystemExit(f"{var}: unknown {', '.join(bad)}; choose among {', '.join(names)}")
    return set(asked)


def build_services(stream):
    want = wanted("MATRIX_SERVICES", ("Rg", "Dg", "Be", "Mm", "Mg"))
    torch.manual_seed(0)
    out = {}
    with torch.no_grad():
        if "Rg" in want:
            out["Rg"] = build_rg(stream)
        if "Dg" in want:
            out["Dg"] = build_dg(stream)
        if "Be" in want:
            out["Be"] = build_be(stream)
        for name in ("Mm", "Mg"):
            if name in want:
                out[name] = build_mm(stream, graph=name == "Mg")
        for name, s in out.items():
            for _ in range(5):
                s.request(lambda: None)
            note(f"{name} warmed up")
    return out


def build_rg(stream):
    """Rg: ResNet-50 fp16 b8, one graph replay per request."""
    r = resnet50().to(DEV).half().eval()
    rx = torch.randn(8, 3, 224, 224, device=DEV, dtype=torch.half)
    rg = capture(stream, lambda: r(rx))
    note("Rg captured")

    span = GpuSpan()
    flush_mb = int(os.environ.get("MATRIX_L2_FLUSH_MB", "0"))
    flush = torch.empty(flush_mb << 20, dtype=torch.uint8, device=DEV) if flush_mb else None

    done = torch.cuda.Event() if os.environ.get("MATRIX_SYNC") == "poll" else None

    before = (lambda: flush.fill_(1)) if flush is not None else None

    def rg_request(on_token):
        one_request(stream, span, rg.replay, on_token, before=before, done=done)

    return Service(rg_request, 1, keep=(r, rx, rg), span=span)


def build_dg(stream):
    """Dg: the decoder, a prefill graph then one step graph replay per token."""
    layers, width, heads = (int(x) for x in os.environ.get("MATRIX_DG_SHAPE", "36,1280,20").split(","))
    ctx = DG_PROMPT + DG_TOKENS
    with torch.device(DEV):
        d = Decoder(layers, width, heads, DG_BATCH, ctx)
    for p in d.parameters():
        if p.dim() >= 2:
            nn.init.normal_(p, std=0.02)
    d = d.half().eval()
    prompt = torch.randint(0, 50000, (DG_BATCH, DG_PROMPT), device=DEV)
    prompt_pos = torch.arange(DG_PROMPT, device=DEV)
    tok = torch.zeros(DG_BATCH, 1, dtype=torch.long, device=DEV)
    pos = torch.zeros(1, dtype=torch.long, device=DEV)
    host = torch.zeros(DG_BATCH, 1, dtype=torch.long).pin_memory()

    def prefill():
        tok.copy_(d(prompt, prompt_pos)[:, None])
        pos.fill_(DG_PROMPT)

    def step():
        tok.copy_(d(tok, pos)[:, None])
        pos.add_(1)

    g_prefill, g_step = capture(stream, prefill), capture(stream, step)
    note("Dg captured")
    done = torch.cuda.Event()

    def dg_request(on_token):
        with torch.cuda.stream(stream):
            for i in range(DG_TOKENS):
                (g_prefill if i == 0 else g_step).replay()
                host.copy_(tok, non_blocking=True)
                done.record(stream)
                done.synchronize()
                on_token()

    return Service(dg_request, DG_TOKENS, keep=(d, prompt, prompt_pos, tok, pos, g_prefill, g_step))


def build_be(stream):
    """Be: BERT-base b1, eager."""
    from transformers import BertConfig, BertModel

    with torch.cuda.stream(stream):
        b = BertModel(BertConfig(), add_pooling_layer=False).to(DEV).half().eval()
    bx = torch.randint(0, 30000, (1, 128), device=DEV)

    span = GpuSpan()

    def be_request(on_token):
        one_request(stream, span, lambda: b(input_ids=bx), on_token)

    return Service(be_request, 1, span=span)


def build_mm(stream, graph):
    """Mm and Mg (lab): one bf16 8192x8192x6144 GEMM a request, launched plainly (Mm) or
    replayed as a graph of that one node (Mg): whether what a request's start costs beside a
    job comes from the graph launch."""
    a = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(8192, 6144, device=DEV, dtype=torch.bfloat16)
    c = torch.empty(8192, 6144, device=DEV, dtype=torch.bfloat16)
    g = capture(stream, lambda: torch.mm(a, b, out=c)) if graph else None
    work = g.replay if g is not None else lambda: torch.mm(a, b, out=c)
    span = GpuSpan()

    def mm_request(on_token):
        one_request(stream, span, work, on_token)

    return Service(mm_request, 1, keep=(a, b, c, g), span=span)


def train_job(dev):
    """T: ResNet-50 fp32 training, batch 64, SGD."""
    return (fp32_training_step(dev), 64.0, 2, "images")


def build_jobs(stream, dev):
    """The jobs on DEV: name -> (step, units per step, steps in flight, unit)."""
    want = wanted("MATRIX_JOBS", ("G", "T", "K"))
    torch.manual_seed(1)
    jobs = {}
    with torch.cuda.stream(stream):
        if "G" in want:
            n = 8192
            p = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
            q = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
            jobs["G"] = (lambda: torch.mm(p, q), 2 * n**3 / 1e12, 4, "TFLOP")
        if "T" in want:
            jobs["T"] = train_job(dev)
        if "K" in want:
            jobs["K"] = (lambda: torch.cuda._sleep(3_400_000), 1.0, 4, "spins")
        for name, (step, *_) in jobs.items():
            for _ in range(5):
                step()
            stream.synchronize()
            note(f"{name} warmed up")
    return jobs


class Tokens:
    """A request's tokens as they reach the host: each one's latency (ms) from the one before,
    the first's from the request's planned arrival, appended to `lat`."""

    def __init__(self, arrival, lat):
        self.prev, self.lat = arrival, lat

    def seen(self):
        t = time.monotonic()
        self.lat.append((t - self.prev) * 1e3)
        self.prev = t


class Worker:
    def __init__(self, role):
        self.services, self.jobs = {}, {}
        job_dev = torch.device(os.environ.get("MATRIX_BE_DEVICE", "cuda")) if role == "both" else DEV
        if (job_dev.index or 0) >= torch.cuda.device_count():
            raise SystemExit(f"MATRIX_BE_DEVICE={job_dev}: this process sees {torch.cuda.device_count()} GPU(s)")
        # In one process the service's stream is the more urgent one, as serving code asks.
        self.hs = torch.cuda.Stream(priority=-1 if role == "both" else 0)
        self.bs = torch.cuda.Stream(device=job_dev, priority=0)
        if role in ("hp", "both"):
            self.services = build_services(self.hs)
        if role in ("be", "both"):
            self.jobs = build_jobs(self.bs, job_dev)
        self.thread, self.stop_flag, self.log, self.unit, self.error = None, None, [], "", None

    def time(self, name, n):
        s, out = self.services[name], []
        with torch.no_grad():
            for _ in range(3):
                s.request(lambda: None)
            for _ in range(n):
                t0 = time.monotonic()
                s.request(lambda: None)
                out.append((time.monotonic() - t0) * 1e3)
        return {"ms": [round(v, 4) for v in out]}

    def serve(self, name, rate, n, seed, cap_s):
        s = self.services[name]
        planned = arrivals(rate, -(-n // s.tokens), seed)
        lat, censored = [], 0
        if s.span is not None:
            s.span.reset()
        # Collections would land in random requests: one now, none while timing (it takes
        # longer than the lead, so it comes before the first arrival is planned).
        gc.collect()
        gc.disable()
        t0 = time.monotonic() + LEAD_S
        cap = t0 + cap_s
        t_first = t_last = None
        ru0 = resource.getrusage(resource.RUSAGE_SELF)
        try:
            with torch.no_grad():
                for i, at in enumerate(planned):
                    arrival = t0 + at
                    wait_until(arrival)
                    now = time.monotonic()
                    if now > cap:
                        # Not run: every request planned by now is a lower bound.
                        late = [t0 + a for a in planned[i:] if t0 + a <= now]
                        lat += [(now - a) * 1e3 for a in late]
                        censored = len(late)
                        break
                    t_first = now if t_first is None else t_first
                    s.request(Tokens(arrival, lat).seen)
                    t_last = time.monotonic()
        finally:
            gc.enable()
        ru1 = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "lat_ms": [round(v, 4) for v in lat],
            "censored": censored,
            "requests": len(planned),
            "seed": seed,
            "rate": rate,
            **(s.span.fields() if s.span is not None else {}),
            "t_first": t_first,
            "t_last": t_last,
            "cpu_s": round(ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime, 4),
            "invol_switches": ru1.ru_nivcsw - ru0.ru_nivcsw,
        }

    def busy(self, name, rate, n):
        import tempfile
        from torch.profiler import ProfilerActivity, profile

        s = self.services[name]
        planned = arrivals(rate, n, 12345)
        with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
            s.request(lambda: None)
            t0 = time.monotonic() + LEAD_S
            for at in planned:
                wait_until(t0 + at)
                s.request(lambda: None)
            wall = time.monotonic() - t0
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
        os.remove(path)
        spans = sorted(
            (e["ts"], e["ts"] + e.get("dur", 0))
            for e in trace.get("traceEvents", [])
            if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
        )
        # Only the timed requests: the last `wall` seconds of device activity.
        if spans:
            end = spans[-1][1]
            spans = [(max(a, end - wall * 1e6), b) for a, b in spans if b > end - wall * 1e6]
        busy_us, cur = 0.0, None
        for a, b in spans:
            if cur is None or a > cur[1]:
                busy_us += 0 if cur is None else cur[1] - cur[0]
                cur = [a, b]
            else:
                cur[1] = max(cur[1], b)
        busy_us += 0 if cur is None else cur[1] - cur[0]
        return {"busy": busy_us / 1e6 / wall, "kernel_s": busy_us / 1e6, "wall_s": wall}

    def flood(self, name):
        step, units, depth, unit = self.jobs[name]
        self.stop_flag = threading.Event()
        self.log, self.unit, self.error = [], unit, None
        t_start = time.monotonic()

        def loop():
            log, done, inflight = [(t_start, 0.0)], 0, []
            try:
                with torch.cuda.stream(self.bs):
                    while not self.stop_flag.is_set():
                        step()
                        ev = torch.cuda.Event()
                        ev.record(self.bs)
                        inflight.append(ev)
                        if len(inflight) >= depth:
                            inflight.pop(0).synchronize()
                            done += 1
                            log.append((time.monotonic(), done * units))
                    for ev in inflight:
                        ev.synchronize()
                        done += 1
                        log.append((time.monotonic(), done * units))
            except Exception as e:  # noqa: BLE001 (reported to the controller)
                self.error = repr(e)
            self.log = log

        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()
        return {"t_start": t_start}

    def stop(self):
        self.stop_flag.set()
        self.thread.join()
        out = {"log": [[round(t, 6), u] for t, u in self.log], "unit": self.unit}
        if self.error:
            out["error"] = self.error
        return out


def main():
    w = Worker(ROLE)
    answer(
        {
            "ready": True,
            "pid": os.getpid(),
            "role": ROLE,
            "baton": "baton" in os.environ.get("LD_PRELOAD", ""),
            "gpu_mib": round(torch.cuda.max_memory_allocated() / 2**20),
        }
    )
    for line in sys.stdin:
        req = json.loads(line)
        try:
            cmd = req["cmd"]
            if cmd == "quit":
                answer({"ok": True})
                break
            if cmd == "time":
                res = w.time(req["hp"], req["n"])
            elif cmd == "serve":
                res = w.serve(req["hp"], req["rate"], req["n"], req["seed"], req["cap_s"])
            elif cmd == "busy":
                res = w.busy(req["hp"], req["rate"], req["n"])
            elif cmd == "flood":
                res = w.flood(req["be"])
            elif cmd == "stop":
                res = w.stop()
            elif cmd == "release":
                # The caching allocator's free blocks back to the driver (baseline.py).
                held = torch.cuda.memory_reserved()
                torch.cuda.empty_cache()
                res = {"reserved_mib": [round(held / 2**20), round(torch.cuda.memory_reserved() / 2**20)]}
            else:
                res = {"error": f"unknown command {cmd!r}"}
        except Exception as e:  # noqa: BLE001 (the controller marks the measurement failed)
            res = {"error": repr(e)}
        answer(res)


if __name__ == "__main__":
    main()
