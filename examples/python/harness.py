"""What the three examples share: a background training loop (the best-effort work), the
closed-loop timing of a service, and the phases each run measures.

Each example runs, in one process: the service alone, the training alone, then both together
(the service's requests timed while training runs in another thread), and prints one JSON
object: per phase the service's request latencies and the training steps completed inside the
service's timed window. `--hints off` runs the same code without any call to `baton`, so the
two can be compared under `baton run` (and natively, where `baton` is not loaded at all).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import threading
import time
from typing import Callable, Dict, List, Optional

import torch
import torch.nn as nn

DEV = torch.device("cuda")


def resnet50() -> nn.Module:
    """ResNet-50: torchvision's when installed, else the standard layout defined in this
    repository's GPU scripts (nothing is downloaded either way)."""
    try:
        from torchvision.models import resnet50 as tv

        return tv()
    except ImportError:
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, os.path.join(here, "..", "..", "scripts", "gpu", "apps"))
        from resnet_workload import resnet50 as ours

        return ours()


def args(description: str, think_ms: float = 5.0) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--hints", choices=["on", "off"], default="on",
                   help="on: the example's baton calls; off: the same code without them")
    p.add_argument("--requests", type=int, default=200, help="timed service requests per phase")
    p.add_argument("--be-seconds", type=float, default=6.0, help="the training-alone phase")
    p.add_argument("--think-ms", type=float, default=think_ms, help="service think time")
    p.add_argument("--out", help="write the JSON here too")
    return p.parse_args()


def hints_on(a: argparse.Namespace) -> bool:
    """Whether this run makes baton calls; refuses `--hints on` without Baton loaded, with
    the package's own error."""
    if a.hints == "off":
        return False
    import baton

    if not baton.loaded():
        baton.status()  # raises NotLoadedError with its message
    return True


class Trainer:
    """ResNet-50 fp32 training, batch 64, SGD, on its own stream, in a thread: the job that
    should soak up what the service leaves. Counts steps with their completion times."""

    def __init__(self, hints: bool, priority: int = 0):
        torch.manual_seed(1)
        self.stream = torch.cuda.Stream()
        self.model = resnet50().to(DEV).train()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.x = torch.randn(64, 3, 224, 224, device=DEV)
        self.y = torch.randint(0, 1000, (64,), device=DEV)
        self.lossf = nn.CrossEntropyLoss()
        self.hints, self.priority = hints, priority
        self.log: List[float] = []
        self.stop_flag = threading.Event()
        self.thread: Optional[threading.Thread] = None
        self.error: Optional[BaseException] = None
        for _ in range(3):
            self.step()
        self.stream.synchronize()

    def step(self) -> None:
        with torch.cuda.stream(self.stream):
            loss = self.lossf(self.model(self.x), self.y)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()

    def _run(self) -> None:
        try:
            if self.hints:
                import baton

                baton.set_stream_priority(self.stream, self.priority)
            ev = []
            while not self.stop_flag.is_set():
                self.step()
                e = torch.cuda.Event()
                e.record(self.stream)
                ev.append(e)
                # Two steps in flight at most; log each as it completes.
                while len(ev) > 1:
                    ev.pop(0).synchronize()
                    self.log.append(time.monotonic())
            for e in ev:
                e.synchronize()
                self.log.append(time.monotonic())
        except BaseException as e:  # reported by stop()
            self.error = e

    def start(self) -> None:
        self.log, self.stop_flag = [], threading.Event()
        self.thread = threading.Thread(target=self._run, name="trainer", daemon=True)
        self.thread.start()
        time.sleep(1.0)  # ramp up before anything is timed

    def stop(self) -> List[float]:
        self.stop_flag.set()
        assert self.thread is not None
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.log


def serve(request: Callable[[], None], n: int, think_ms: float, warmup: int = 10) -> Dict:
    """Closed loop: `warmup` untimed requests, then `n` timed ones, `think_ms` apart; each
    request is timed until its result is on the host (the request function synchronizes)."""
    for _ in range(warmup):
        request()
        time.sleep(think_ms / 1e3)
    lat = []
    gc.collect()
    gc.disable()
    try:
        t_first = time.monotonic()
        for _ in range(n):
            t0 = time.monotonic()
            request()
            lat.append((time.monotonic() - t0) * 1e3)
            time.sleep(think_ms / 1e3)
        t_last = time.monotonic()
    finally:
        gc.enable()
    return {"lat_ms": [round(v, 4) for v in lat], "t_first": t_first, "t_last": t_last}


def pct(v: List[float], q: float) -> float:
    s = sorted(v)
    return s[min(len(s) - 1, int(q / 100.0 * len(s)))] if s else float("nan")


def run_phases(a: argparse.Namespace, name: str, request: Callable[[], None],
               trainer: Trainer, check: Optional[Callable[[], Dict]] = None) -> Dict:
    """Service alone, training alone, both; the document the example prints."""
    out: Dict = {"example": name, "hints": a.hints, "baton_loaded": _baton_loaded()}
    out["hp_alone"] = serve(request, a.requests, a.think_ms)
    trainer.start()
    t0 = time.monotonic()
    time.sleep(a.be_seconds)
    t1 = time.monotonic()
    log = trainer.stop()
    out["be_alone"] = {"steps": sum(1 for t in log if t0 <= t <= t1), "seconds": t1 - t0}
    trainer.start()
    both = serve(request, a.requests, a.think_ms)
    log = trainer.stop()
    both["be_steps"] = sum(1 for t in log if both["t_first"] <= t <= both["t_last"])
    both["be_covered"] = bool(log) and log[0] <= both["t_first"] and log[-1] >= both["t_last"] - 1.0
    out["both"] = both
    if check is not None:
        out["check"] = check()
    for k in ("hp_alone", "both"):
        v = out[k]["lat_ms"]
        out[k]["p50_ms"], out[k]["p99_ms"] = pct(v, 50), pct(v, 99)
    window = both["t_last"] - both["t_first"]
    rate_alone = out["be_alone"]["steps"] / out["be_alone"]["seconds"]
    out["summary"] = {
        "hp_p50_x": out["both"]["p50_ms"] / out["hp_alone"]["p50_ms"],
        "hp_p99_x": out["both"]["p99_ms"] / out["hp_alone"]["p99_ms"],
        "be_share": (both["be_steps"] / window) / rate_alone if rate_alone > 0 else float("nan"),
    }
    text = json.dumps(out)
    print(text, flush=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    return out


def _baton_loaded() -> bool:
    try:
        import baton

        return baton.loaded()
    except ImportError:
        return False
