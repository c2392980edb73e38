#!/usr/bin/env python3
"""The benchmark suite: Baton vs native vs the native alternative, on one GPU.

  suite.py [--quick] [--setups separate,mps,oneproc] [--out DIR]

Setups: separate processes (default time-slicing), separate processes under MPS, one process
with two streams (two threads). Configurations per setup: native; the native alternative
(MPS itself; a high-priority stream); Baton at level 1, level 2 (gates; in every setup) and
level 3 (separate processes only: one context cannot be sliced against itself); best-effort
kernels on part of the SMs (`--sms`, under MPS and in one process, with and without Baton's
suspensions); UP 75/25 (full run).
Baselines: HP alone, BE alone. Each run records the machine, driver, CUDA and the commit
($BATON_COMMIT). Writes DIR/suite.jsonl, one line per run, and prints a summary table.
--quick: ResNet-50 batch 1 beside ResNet-50 training, short runs (~7 minutes). Full: ResNet-50
and BERT-base at batch 1 and 8, beside training, a bf16 GEMM flood and a CuPy job (~40 min;
run a part at a time with --models/--jobs/--setups).
"""

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
W = [sys.executable, os.path.join(HERE, "workloads.py")]
sys.path.insert(0, os.path.join(HERE, "..", "apps"))
from mps import mps  # noqa: E402


def machine():
    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True
    ).stdout.strip()
    try:
        import torch

        cuda = torch.version.cuda
    except Exception:  # noqa: BLE001
        cuda = None
    return {
        "gpu": smi,
        "cuda": cuda,
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "commit": os.environ.get("BATON_COMMIT", "unknown"),
    }


class Suite:
    def __init__(self, a):
        self.a, self.tmp = a, tempfile.mkdtemp(prefix="baton-suite.")
        self.baton = os.environ.get("BATON_BIN", os.path.join(ROOT, "target", "release", "baton"))
        self.out = open(os.path.join(a.out, "suite.jsonl"), "a")
        self.meta = machine()
        self.env = dict(os.environ, BATON_SOCKET=os.path.join(self.tmp, "baton.sock"), PYTHONUNBUFFERED="1")

    def wrap(self, cfg, role):
        """The command prefix for ROLE (hp/be) under configuration CFG."""
        if cfg in ("native", "mps", "priority-stream"):
            return []
        if cfg == "baton-local":
            return [self.baton, "run", "--local", "--"]
        if cfg == "baton-local-l2":
            return [self.baton, "run", "--local", "--level", "2", "--"]
        sms = ["--sms", str(self.a.be_sms)]
        if cfg == "baton-local-sms":
            return [self.baton, "run", "--local", *sms, "--"]
        if cfg == "sms-only":
            # Spatial sharing alone: nothing suspends the best-effort stream.
            return ["env", "BATON_SCHEDULER=app", self.baton, "run", *sms, "--"]
        prio = ["--priority", "10" if role == "hp" else "0"]
        if cfg == "baton-up":
            prio = ["--utilization", "75" if role == "hp" else "25"]
        lvl = (
            {"baton-l2": ["--level", "2"], "baton-l3": ["--level", "3"], "baton-sms": sms}.get(cfg, [])
            if role == "be"
            else []
        )
        return [self.baton, "run", *prio, *lvl, "--"]

    def record(self, setup, cfg, hp_args, be_args, res):
        rec = {
            "setup": setup,
            "config": cfg,
            "hp_args": hp_args,
            "be_args": be_args,
            "be_sms": self.a.be_sms if "sms" in cfg else None,
            "machine": self.meta,
            "time": time.time(),
            **res,
        }
        self.out.write(json.dumps(rec) + "\n")
        self.out.flush()
        hp, be = res.get("hp") or {}, res.get("be") or {}
        print(
            f"{setup:9} {cfg:15} {' '.join(hp_args):38} {' '.join(be_args):14} "
            f"HP p50 {hp.get('p50_ms') or 0:7.2f} p99 {hp.get('p99_ms') or 0:7.2f} ms  "
            f"BE {be.get('rate') or 0:8.1f} {be.get('unit', '')}",
            flush=True,
        )

    def run(self, cmd, env=None):
        return subprocess.Popen(
            cmd, env=env or self.env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.tmp, "stderr.log"), "a")
        )

    def finish(self, p, limit):
        """Waits for P at most LIMIT seconds; a process still running then is killed (a hang
        must not cost the rest of the run) and reported as such."""
        try:
            p.wait(timeout=limit)
            return None
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            return f"killed after {limit:.0f} s"

    def load(self, path):
        try:
            return json.load(open(path))
        except (OSError, ValueError):
            return {}

    def pair(self, setup, cfg, hp_args, be_args, env=None):
        s = self.a.seconds
        hp_out, be_out = os.path.join(self.tmp, "hp.json"), os.path.join(self.tmp, "be.json")
        for f in (hp_out, be_out):
            if os.path.exists(f):
                os.remove(f)
        if setup == "oneproc":
            p = self.run(
                self.wrap(cfg, "hp") + W + ["both", *hp_args, *be_args, "--seconds", str(s), "--out", hp_out], env
            )
            err = self.finish(p, s + 150)
            r = self.load(hp_out)
            self.record(setup, cfg, hp_args, be_args, {"hp": r.get("hp"), "be": r.get("be"), "error": err})
            return
        ready, stop = os.path.join(self.tmp, "be.ready"), os.path.join(self.tmp, "be.stop")
        for f in (ready, stop):
            if os.path.exists(f):
                os.remove(f)
        # BE warms up first (cuDNN autotuning); its measured window then runs from HP's start
        # to HP's end.
        be = self.run(
            self.wrap(cfg, "be") + W + ["be", *be_args, "--ready-file", ready, "--stop-file", stop, "--out", be_out],
            env,
        )
        t0 = time.monotonic()
        while not os.path.exists(ready) and be.poll() is None and time.monotonic() - t0 < 180:
            time.sleep(0.2)
        hp = self.run(self.wrap(cfg, "hp") + W + ["hp", *hp_args, "--seconds", str(s), "--out", hp_out], env)
        err = self.finish(hp, s + 120)
        open(stop, "w").close()
        err = self.finish(be, 60) or err
        self.record(
            setup,
            cfg,
            hp_args,
            be_args,
            {"hp": self.load(hp_out).get("hp"), "be": self.load(be_out).get("be"), "error": err},
        )

    def alone(self, hp_args=None, be_args=None):
        out = os.path.join(self.tmp, "alone.json")
        if hp_args:
            self.run(W + ["hp", *hp_args, "--seconds", str(self.a.seconds), "--out", out]).wait()
            self.record("alone", "native", hp_args, [], {"hp": self.load(out).get("hp")})
        if be_args:
            self.run(W + ["be", *be_args, "--seconds", str(self.a.seconds), "--out", out]).wait()
            self.record("alone", "native", [], be_args, {"be": self.load(out).get("be")})

    def mps(self, on):
        return mps(self.tmp, self.env, on)

    def stop_daemon(self):
        subprocess.run([self.baton, "daemon", "--stop"], env=self.env, capture_output=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--setups", default="separate,mps,oneproc")
    p.add_argument("--models", default=None, help="e.g. resnet50:1,bert:8")
    p.add_argument("--jobs", default=None, help="e.g. train,gemm,cupy")
    p.add_argument("--seconds", type=float, default=None)
    p.add_argument("--configs", default=None, help="only these configurations, e.g. native,baton-l3")
    p.add_argument("--rate", type=float, default=50.0)
    p.add_argument(
        "--be-sms",
        type=int,
        default=0,
        help="SMs for best-effort kernels in the spatial configurations "
        "[default: the device's minus 15 %%, to a multiple of 8]",
    )
    p.add_argument("--out", default=os.environ.get("OUT", "out"))
    a = p.parse_args()
    a.seconds = a.seconds or (15 if a.quick else 30)
    if not a.be_sms:
        import torch

        n = torch.cuda.get_device_properties(0).multi_processor_count
        a.be_sms = max(8, int(n * 0.85) // 8 * 8)
    models = a.models or ("resnet50:1" if a.quick else "resnet50:1,resnet50:8,bert:1,bert:8")
    jobs = (a.jobs or ("train" if a.quick else "train,gemm,cupy")).split(",")
    os.makedirs(a.out, exist_ok=True)
    s = Suite(a)
    configs = {
        "separate": ["native", "baton-l1", "baton-l2", "baton-l3"] + ([] if a.quick else ["baton-up"]),
        "mps": ["mps", "baton-l1", "baton-l2", "baton-sms"],
        "oneproc": ["priority-stream", "baton-local", "baton-local-l2", "baton-local-sms", "sms-only"],
    }
    for job in jobs:
        s.alone(be_args=["--job", job])
    for mb in models.split(","):
        model, batch = mb.split(":")
        hp_args = ["--model", model, "--batch", batch, "--rate", str(a.rate)]
        s.alone(hp_args=hp_args)
        for job in jobs:
            be_args = ["--job", job]
            for setup in a.setups.split(","):
                env = None
                if setup == "mps":
                    if not shutil.which("nvidia-cuda-mps-control"):
                        print("no nvidia-cuda-mps-control: MPS setup skipped")
                        continue
                    env = s.mps(True)
                try:
                    for cfg in configs[setup]:
                        if a.configs and cfg not in a.configs.split(","):
                            continue
                        if cfg == "baton-up":
                            s.stop_daemon()
                            d = subprocess.Popen(
                                [s.baton, "daemon", "--policy", "up"],
                                env=s.env,
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL,
                            )
                            time.sleep(1)
                        s.pair(setup, cfg, hp_args, be_args, env)
                        if cfg == "baton-up":
                            s.stop_daemon()
                            d.send_signal(signal.SIGTERM)
                finally:
                    if setup == "mps":
                        s.stop_daemon()  # its daemon was an MPS client
                        s.mps(False)
    s.stop_daemon()


if __name__ == "__main__":
    main()
