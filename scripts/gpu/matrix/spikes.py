#!/usr/bin/env python3
"""Where a service's latency spikes come from when it runs alone on the GPU machine: R
(ResNet-50 fp16 batch 8, as in the matrix) served in one process under several ways of placing
and waiting, alternating, with what happened to the serving thread during every request.

  spikes.py --out DIR [--n 600] [--rounds 2] [--configs pin4,pin1,all,fifo,yield]

Configurations (set at run time for every thread of the process):
  pin4   the matrix's placement: CPUs n/2 .. n/2+n/4-1, spinning in synchronize
  pin1   one CPU, one intra-op thread
  all    every CPU
  fifo   pin4, the serving thread under SCHED_FIFO (needs the privilege; skipped otherwise)
  yield  pin4, waiting on a blocking-sync event instead of spinning

Per request it records the wall time, the serving thread's CPU time, its voluntary and
involuntary context switches and the CPU it ended on; per configuration, the interrupts and the
per-CPU time (user, system, irq, softirq, steal) of the serving CPUs. A spike is a request over
twice the configuration's median. Writes DIR/spikes.json and prints a line per configuration:
whether spikes are a thread kept off its CPU (CPU time well below wall time, involuntary
switches) or a thread that ran slowly (CPU time ~ wall time).
"""
import argparse, gc, json, os, resource, statistics, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "apps"))


def tasks():
    return [int(t) for t in os.listdir("/proc/self/task")]


def place(cpus):
    for t in tasks():
        try:
            os.sched_setaffinity(t, cpus)
        except OSError:
            pass


def cpu_times(cpus):
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            head, *vals = line.split()
            if head.startswith("cpu") and head[3:].isdigit() and int(head[3:]) in cpus:
                v = [int(x) for x in vals]
                out[int(head[3:])] = {"user": v[0], "system": v[2], "irq": v[5], "softirq": v[6], "steal": v[7]}
    return out


def interrupts(cpus):
    """Interrupts per serving CPU, summed over sources, and the top sources."""
    with open("/proc/interrupts") as f:
        header = f.readline().split()
        col = {int(h[3:]): i for i, h in enumerate(header) if h.startswith("CPU")}
        per, src = {c: 0 for c in cpus}, {}
        for line in f:
            parts = line.split()
            if not parts:
                continue
            name = parts[0].rstrip(":")
            counts = parts[1:1 + len(header)]
            for c in cpus:
                i = col.get(c)
                if i is not None and i < len(counts) and counts[i].isdigit():
                    per[c] += int(counts[i])
                    src[name] = src.get(name, 0) + int(counts[i])
    return per, src


def diff(a, b):
    if isinstance(a, dict):
        return {k: diff(a[k], b[k]) for k in a if k in b}
    return b - a


def last_cpu():
    with open("/proc/thread-self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--n", type=int, default=600)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--configs", default="pin4,pin1,all,fifo,yield")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import torch
    from resnet_workload import resnet50

    n_cpu = os.cpu_count()
    pin4 = set(range(n_cpu // 2, n_cpu // 2 + max(1, n_cpu // 4)))
    pin1 = {min(pin4)}
    every = set(range(n_cpu))
    place(pin4)
    dev = torch.device("cuda")
    s = torch.cuda.Stream()
    torch.manual_seed(0)
    with torch.cuda.stream(s), torch.no_grad():
        model = resnet50().to(dev).half().eval()
        x = torch.randn(8, 3, 224, 224, device=dev, dtype=torch.half)
        for _ in range(30):
            model(x)
        s.synchronize()
    threads0 = torch.get_num_threads()
    runs = []
    for rnd in range(a.rounds):
        for cfg in a.configs.split(","):
            cpus = {"pin4": pin4, "pin1": pin1, "all": every}.get(cfg, pin4)
            place(cpus)
            torch.set_num_threads(1 if cfg == "pin1" else threads0)
            if cfg == "fifo":
                try:
                    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
                except (PermissionError, OSError) as e:
                    print(f"fifo: skipped ({e})", flush=True)
                    continue
            ev = torch.cuda.Event(blocking=True) if cfg == "yield" else None
            rec = {"round": rnd, "config": cfg, "cpus": sorted(cpus), "req": []}
            watch = cpus if len(cpus) <= 8 else pin4
            t0s, i0s = cpu_times(watch), interrupts(watch)
            with torch.cuda.stream(s), torch.no_grad():
                for _ in range(10):
                    model(x)
                    s.synchronize()
                gc.collect()
                gc.disable()
                try:
                    for _ in range(a.n):
                        r0 = resource.getrusage(resource.RUSAGE_THREAD)
                        c0 = time.thread_time()
                        w0 = time.monotonic()
                        model(x)
                        if ev is not None:
                            ev.record(s)
                            ev.synchronize()
                        else:
                            s.synchronize()
                        w1 = time.monotonic()
                        c1 = time.thread_time()
                        r1 = resource.getrusage(resource.RUSAGE_THREAD)
                        rec["req"].append([round((w1 - w0) * 1e3, 3), round((c1 - c0) * 1e3, 3),
                                           r1.ru_nvcsw - r0.ru_nvcsw, r1.ru_nivcsw - r0.ru_nivcsw, last_cpu()])
                        end = time.monotonic() + 0.005
                        time.sleep(0.004)
                        while time.monotonic() < end:
                            time.sleep(0)
                finally:
                    gc.enable()
            if cfg == "fifo":
                os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            t1s, i1s = cpu_times(watch), interrupts(watch)
            rec["cpu_ticks"] = diff(t0s, t1s)
            rec["irq_per_cpu"] = diff(i0s[0], i1s[0])
            src = diff(i0s[1], i1s[1])
            rec["irq_top"] = sorted(src.items(), key=lambda kv: -kv[1])[:8]
            runs.append(rec)
            lat = [r[0] for r in rec["req"]]
            med = statistics.median(lat)
            sp = [r for r in rec["req"] if r[0] > 2 * med]
            ok = [r for r in rec["req"] if r[0] <= 2 * med]
            lat_s = sorted(lat)
            p99 = lat_s[max(0, int(round(0.99 * len(lat_s))) - 1)]

            def share(rs):
                return statistics.median(r[1] / r[0] for r in rs) if rs else float("nan")
            print(f"round {rnd} {cfg:5}: p50 {med:6.2f} p99 {p99:6.2f} max {lat_s[-1]:6.2f} ms; "
                  f"spikes {len(sp):3} (cpu/wall {share(sp):.2f}, invol {sum(r[3] for r in sp)}, "
                  f"vol {sum(r[2] for r in sp)}); normal cpu/wall {share(ok):.2f}, invol {sum(r[3] for r in ok)}; "
                  f"irq {sum(rec['irq_per_cpu'].values())}; ticks {json.dumps(rec['cpu_ticks'])}", flush=True)
    json.dump({"runs": runs, "n_cpu": n_cpu, "torch_threads": threads0}, open(os.path.join(a.out, "spikes.json"), "w"))


if __name__ == "__main__":
    main()
