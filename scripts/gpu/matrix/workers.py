#!/usr/bin/env python3
"""The co-location matrix's GPU workers: long-lived processes that matrix.py drives, one JSON
object per line (commands on stdin, answers on the process's original stdout; everything else
the libraries print goes to stderr).

  workers.py hp     R, B and D loaded and warmed up, served on a non-default stream
  workers.py be     G and T loaded and warmed up, flooding on a non-default stream
  workers.py both   all five in one process: HP on a high-priority stream, BE in a thread on
                    a normal-priority one (the ordinary in-process signal); with
                    MATRIX_BE_DEVICE=cuda:1 the BE thread's work goes to a second GPU, so the
                    two share the process (interpreter, CPUs, runtime) and not the GPU

Workloads (random weights, nothing downloaded):
  R  ResNet-50 fp16, batch 8, inference             B  BERT-base fp16, batch 1, sequence 128
  D  GPT-2-medium shape (24 layers, width 1024, 16 heads) fp16, batch 1, a 128-token prompt,
     32 greedy new tokens through Hugging Face `generate`
  G  bf16 8192x8192x8192 GEMMs back to back (unit: TFLOP)
  T  ResNet-50 fp32 training, batch 64, SGD (unit: images)

Commands and answers:
  {"cmd": "hp", "hp": "R", "n": 300, "warmup": 10, "think_ms": 5, "think_mode": "hybrid"}
      -> {"lat_ms": [...], "t_first": T, "t_last": T, "cpu_s": C, "invol_switches": N}
      n closed-loop requests after warm-up, garbage collection off while timing
  {"cmd": "busy", "hp": "R", "n": 60, "think_ms": 5}
      -> {"busy": F, "kernel_s": K, "wall_s": W}        GPU-busy share (CUDA profiler)
  {"cmd": "flood", "be": "G"} -> {"t_start": T}         BE runs in a thread until "stop"
  {"cmd": "pause"} -> {"t_paused": T}   the flood stops launching and its launched steps drain;
                                        answered once nothing of it is left on the device
  {"cmd": "resume"} -> {"t_resumed": T} the paused flood launches again (no restart: the
                                        training job keeps its state, its allocator, its tuning)
  {"cmd": "stop"} -> {"log": [[t, units], ...], "unit": U}   one entry per completed step, and
                                        one at each pause's end and resume (the flat stretch)
  {"cmd": "quit"}
Times are CLOCK_MONOTONIC seconds: one clock for every process of the machine.
"""
import gc, json, os, resource, sys, threading, time

ROLE = sys.argv[1] if len(sys.argv) > 1 else ""
if ROLE not in ("hp", "be", "both"):
    sys.exit(__doc__)

# The protocol keeps the original stdout; whatever the libraries print goes to stderr.
PROTO = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)

# CPU placement (set before CUDA creates any thread, which then inherits it): the matrix gives
# each role its own cores so that a busy BE thread never shares a core with HP's launches.
_cpus = os.environ.get("MATRIX_CPUS")
if _cpus:
    os.sched_setaffinity(0, {int(c) for c in _cpus.split(",")})

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from resnet_workload import resnet50  # noqa: E402

DEV = torch.device("cuda")
THINK_MS = {"R": 5.0, "B": 5.0, "D": 20.0}


def think_wait(seconds, mode):
    """The think time between requests. `hybrid` (the matrix's default): asleep, then awake for
    the last millisecond, yielding the interpreter lock; `spin`: awake throughout; `sleep`:
    asleep throughout. None of the three steadies the latency on a shared VM
    (docs/benchmarks/matrix/README.md, "Noise")."""
    end = time.monotonic() + seconds
    if mode == "sleep":
        time.sleep(seconds)
        return
    if mode == "hybrid" and seconds > 0.002:
        time.sleep(seconds - 0.001)
    while time.monotonic() < end:
        time.sleep(0)


def answer(obj):
    PROTO.write(json.dumps(obj) + "\n")
    PROTO.flush()


def build_hp(stream):
    """The three services, each a no-argument request function, warmed up on STREAM."""
    from transformers import BertConfig, BertModel, GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    fns = {}
    with torch.cuda.stream(stream), torch.no_grad():
        r = resnet50().to(DEV).half().eval()
        rx = torch.randn(8, 3, 224, 224, device=DEV, dtype=torch.half)
        fns["R"] = lambda: r(rx)

        b = BertModel(BertConfig(), add_pooling_layer=False).to(DEV).half().eval()
        bx = torch.randint(0, 30000, (1, 128), device=DEV)
        fns["B"] = lambda: b(input_ids=bx)

        d = GPT2LMHeadModel(GPT2Config(n_layer=24, n_embd=1024, n_head=16)).to(DEV).half().eval()
        dx = torch.randint(0, 50000, (1, 128), device=DEV)
        dm = torch.ones_like(dx)

        def decode():
            out = d.generate(input_ids=dx, attention_mask=dm, max_new_tokens=32, min_new_tokens=32,
                             do_sample=False, pad_token_id=0)
            if out.shape[1] != 160:
                raise RuntimeError(f"D generated {out.shape[1] - 128} tokens, not 32")
            return out
        fns["D"] = decode
        for name, fn in fns.items():
            for _ in range(3 if name == "D" else 20):
                fn()
        stream.synchronize()
    return fns


def build_be(stream, dev):
    """The two floods on DEV: (step function, units per step, steps in flight, unit)."""
    torch.manual_seed(1)
    bes = {}
    with torch.cuda.stream(stream):
        n = 8192
        p = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        q = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        bes["G"] = (lambda: torch.mm(p, q), 2 * n ** 3 / 1e12, 4, "TFLOP")

        torch.backends.cudnn.benchmark = True
        m = resnet50().to(dev).train()
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
        x = torch.randn(64, 3, 224, 224, device=dev)
        y = torch.randint(0, 1000, (64,), device=dev)
        lossf = nn.CrossEntropyLoss()

        def train_step():
            loss = lossf(m(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        bes["T"] = (train_step, 64.0, 2, "images")
        for step, *_ in bes.values():
            for _ in range(5):
                step()
        stream.synchronize()
    return bes


class Worker:
    def __init__(self, role):
        self.fns, self.bes = {}, {}
        hp_prio = -1 if role == "both" else 0
        # The control for sharing a process without sharing the GPU (matrix mode native-split).
        be_dev = torch.device(os.environ.get("MATRIX_BE_DEVICE", "cuda")) if role == "both" else DEV
        if (be_dev.index or 0) >= torch.cuda.device_count():
            raise SystemExit(f"MATRIX_BE_DEVICE={be_dev}: this process sees {torch.cuda.device_count()} GPU(s)")
        self.hs = torch.cuda.Stream(priority=hp_prio)
        self.bs = torch.cuda.Stream(device=be_dev, priority=0)
        if role in ("hp", "both"):
            self.fns = build_hp(self.hs)
        if role in ("be", "both"):
            self.bes = build_be(self.bs, be_dev)
        self.flood_thread, self.stop_flag, self.flood_log, self.flood_unit = None, None, [], ""
        self.flood_error = None
        # Pausing: `go` is set while the flood may launch; `drained` once a pause took effect.
        self.go, self.drained = threading.Event(), threading.Event()

    def serve(self, name, n, warmup, think_ms, think_mode):
        fn, think = self.fns[name], think_ms / 1e3
        lat, starts, t_first, t_last = [], [], None, None
        with torch.cuda.stream(self.hs), torch.no_grad():
            for _ in range(warmup):
                fn()
                self.hs.synchronize()
                think_wait(think, think_mode)
            # Collections would land in random requests: none while timing.
            gc.collect()
            gc.disable()
            ru0 = resource.getrusage(resource.RUSAGE_SELF)
            try:
                for _ in range(n):
                    t0 = time.monotonic()
                    fn()
                    self.hs.synchronize()
                    t1 = time.monotonic()
                    t_first = t0 if t_first is None else t_first
                    t_last = t1
                    lat.append((t1 - t0) * 1e3)
                    starts.append(t0)
                    think_wait(think, think_mode)
            finally:
                gc.enable()
            ru1 = resource.getrusage(resource.RUSAGE_SELF)
        return {"lat_ms": [round(v, 4) for v in lat], "t0_s": [round(v, 6) for v in starts],
                "t_first": t_first, "t_last": t_last,
                "cpu_s": round(ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime, 4),
                "invol_switches": ru1.ru_nivcsw - ru0.ru_nivcsw}

    def busy(self, name, n, think_ms, think_mode):
        """Kernel and copy time on the device (their union) over wall time, alone, from the
        CUDA activity the profiler records."""
        import tempfile
        from torch.profiler import ProfilerActivity, profile
        fn, think = self.fns[name], think_ms / 1e3
        with torch.cuda.stream(self.hs), torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(2):
                fn()
                self.hs.synchronize()
                think_wait(think, think_mode)
            t0 = time.monotonic()
            for i in range(n):
                fn()
                self.hs.synchronize()
                if i < n - 1:
                    think_wait(think, think_mode)
            wall = time.monotonic() - t0
        path = tempfile.mktemp(suffix=".json")
        prof.export_chrome_trace(path)
        trace = json.load(open(path))
        os.remove(path)
        spans = sorted((e["ts"], e["ts"] + e.get("dur", 0)) for e in trace.get("traceEvents", [])
                       if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
        # Only the timed requests: the last `wall` seconds of device activity.
        if spans:
            end = spans[-1][1]
            spans = [(max(s, end - wall * 1e6), e) for s, e in spans if e > end - wall * 1e6]
        kernel_us, cur_s, cur_e = 0.0, None, None
        for s, e in spans:
            if cur_e is None or s > cur_e:
                if cur_e is not None:
                    kernel_us += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        if cur_e is not None:
            kernel_us += cur_e - cur_s
        return {"busy": kernel_us / 1e6 / wall, "kernel_s": kernel_us / 1e6, "wall_s": wall}

    def flood(self, name):
        step, units, depth, unit = self.bes[name]
        self.stop_flag = threading.Event()
        self.flood_log, self.flood_unit, self.flood_error = [], unit, None
        self.go.set()
        self.drained.clear()
        t_start = time.monotonic()

        def loop():
            log, done, inflight = [(t_start, 0.0)], 0, []

            def drain():
                nonlocal done
                for ev in inflight:
                    ev.synchronize()
                    done += 1
                    log.append((time.monotonic(), done * units))
                inflight.clear()
            try:
                with torch.cuda.stream(self.bs):
                    while not self.stop_flag.is_set():
                        if not self.go.is_set():
                            drain()
                            log.append((time.monotonic(), done * units))
                            self.drained.set()
                            self.go.wait()
                            log.append((time.monotonic(), done * units))
                            continue
                        step()
                        ev = torch.cuda.Event()
                        ev.record(self.bs)
                        inflight.append(ev)
                        if len(inflight) >= depth:
                            inflight.pop(0).synchronize()
                            done += 1
                            log.append((time.monotonic(), done * units))
                    drain()
            except Exception as e:  # noqa: BLE001 (reported to the controller)
                self.flood_error = repr(e)
            self.flood_log = log
            self.drained.set()
        self.flood_thread = threading.Thread(target=loop, daemon=True)
        self.flood_thread.start()
        return {"t_start": t_start}

    def pause(self):
        self.drained.clear()
        self.go.clear()
        if not self.drained.wait(120):
            raise RuntimeError("the flood did not drain within 120 s")
        return {"t_paused": time.monotonic()}

    def resume(self):
        self.go.set()
        return {"t_resumed": time.monotonic()}

    def stop(self):
        self.stop_flag.set()
        self.go.set()
        self.flood_thread.join()
        out = {"log": [[round(t, 6), u] for t, u in self.flood_log], "unit": self.flood_unit}
        if self.flood_error:
            out["error"] = self.flood_error
        return out


def main():
    w = Worker(ROLE)
    answer({"ready": True, "pid": os.getpid(), "role": ROLE,
            "baton": "baton" in os.environ.get("LD_PRELOAD", "")})
    for line in sys.stdin:
        req = json.loads(line)
        try:
            cmd = req["cmd"]
            if cmd == "quit":
                answer({"ok": True})
                break
            if cmd == "hp":
                name = req["hp"]
                res = w.serve(name, req["n"], req.get("warmup", 5), req.get("think_ms", THINK_MS[name]),
                              req.get("think_mode", "hybrid"))
            elif cmd == "busy":
                name = req["hp"]
                res = w.busy(name, req["n"], req.get("think_ms", THINK_MS[name]), req.get("think_mode", "hybrid"))
            elif cmd == "flood":
                res = w.flood(req["be"])
            elif cmd == "pause":
                res = w.pause()
            elif cmd == "resume":
                res = w.resume()
            elif cmd == "stop":
                res = w.stop()
            else:
                res = {"error": f"unknown command {cmd!r}"}
        except Exception as e:  # noqa: BLE001 (the controller marks the measurement failed)
            res = {"error": repr(e)}
        answer(res)


if __name__ == "__main__":
    main()
