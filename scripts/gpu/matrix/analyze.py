#!/usr/bin/env python3
"""The co-location matrix's analysis, second edition: from the raw files matrix.py writes to
each cell's pooled statistics, its verdicts and the table. The standard library suffices (numpy,
where it is installed, only makes the bootstrap faster), so CI runs the self-test and anyone can
regenerate the documents without a GPU.

  analyze.py DIR [--boot N] [--skip K]
                              reads DIR/raw-*.json (or .json.gz); writes DIR/summary.json
                              (schema 2) and DIR/table.md; prints the table. --skip K drops the first K samples
                              of every measurement (only for runs whose first requests a
                              harness defect delayed, which their page says)
  analyze.py --positions DIR  for each measurement with MATRIX_GPU_START's series, the median
                              start on the GPU after the host's call by the request's place in
                              its busy period (0: it found the server idle; 1: the first
                              queued behind it; ...; 5: the fifth and later)
  analyze.py --self-test

A cell is (setup, service, job, mode, pinned). Its latency samples are pooled over its repeats
(Dg: every token is a sample); so are its service's samples alone (same setup, same pinning).
The statistic is the pooled p99 ratio: the p99 of the cell's samples over the p99 of the
service's samples alone (nearest rank), with a 90 % bootstrap interval (the samples of each
repeat resampled within that repeat, cell and alone independently). The job's share: its units
inside the service's windows over the windows' length, pooled over the repeats, over its rate
alone (and over native's share), with an interval from resampling the repeats.

The rules, for every Baton mode (native is judged too, as the reference):
  protect          p99 ratio <= x1.10 of the reference (alone; in P native-split) AND the
                   cell's p99 <= native's
  no harm          where native's p99 ratio <= x1.10: the job >= 90 % of native's share
  work-conserving  otherwise: the job >= 80 % of its rate alone x (1 - the service's GPU-busy
                   share at its load)
A bound holds when the whole 90 % interval meets it (SPEC.md), fails when the whole interval
is beyond it, and is undecided otherwise (an estimate under the bound with its interval above
it included); a rule of two bounds fails if either fails and holds if both
hold. A p99 that censored samples decide (over 1 % of the samples never ran: services.py) is a
lower bound: it can fail a bound, never hold one. A cell holds when protect and the job's rule
that applies both hold.

For a service of one sample a request the table also says where a request's time goes: from the
measurement's arrivals (its seed and rate) and latencies, each request's service time, from
when it could start (its arrival, or the end of the one before) to its end, split by whether it
found the server idle or queued, the median alone and in the cell; with MATRIX_GPU_TIME's spans
on the GPU, theirs too, and with MATRIX_GPU_START each request's start on the GPU after the
host's call (the hand-over at its start).
"""

import glob
import gzip
import json
import math
import os
import random
import statistics
import sys
import tarfile
import tempfile

PROTECT, NO_HARM, WORK_CONSERVING = 1.10, 0.90, 0.80
SETUP_NAMES = {
    "S": "separate processes, time-sliced",
    "M": "separate processes, MPS",
    "P": "one process, the service on a high-priority stream",
}
SERVICE_NAMES = {
    "Rg25": "ResNet-50 b8 graph, 25 % load",
    "Rg60": "ResNet-50 b8 graph, 60 % load",
    "Dg": "decoder, one graph a token",
    "Be": "BERT-base b1 eager",
    "Mm60": "one bf16 GEMM launched plainly, 60 % load (lab)",
    "Mg60": "the same GEMM as a one-node graph, 60 % load (lab)",
}
JOB_NAMES = {"G": "bf16 GEMM flood", "T": "ResNet-50 training", "K": "clock spin (lab)"}
HOLDS, FAILS, UNDECIDED, NA = "holds", "fails", "undecided", "n/a"

try:
    import numpy as np
except ImportError:  # pragma: no cover (CI's Python may lack it)
    np = None


def pct(v, q):
    """Nearest-rank percentile (the value at rank ceil(q * n)); None for no samples."""
    if not len(v):
        return None
    s = sorted(v)
    return s[min(len(s), max(1, math.ceil(q * len(s)))) - 1]


def median(v):
    return statistics.median(v) if v else None


def rotate(items, k):
    k %= len(items)
    return items[k:] + items[:k]


def progress_at(log, t):
    """Units done by time T, from a log of (time, cumulative units) at completions, linear
    between two completions; None outside the log."""
    if not log or t < log[0][0] or t > log[-1][0]:
        return None
    lo, hi = 0, len(log) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if log[mid][0] <= t:
            lo = mid
        else:
            hi = mid
    (t0, u0), (t1, u1) = log[lo], log[hi]
    if t1 <= t0:
        return u1 if t >= t1 else u0
    return u0 + (u1 - u0) * (t - t0) / (t1 - t0)


def window_progress(log, t_first, t_last):
    """The job's progress inside [t_first, t_last]: units, and whether the log covers it."""
    a, b = progress_at(log, t_first), progress_at(log, t_last)
    if a is None or b is None or t_last <= t_first:
        return {"units": None, "covered": False}
    return {"units": b - a, "covered": True}


def window_rate(log, t_from, t_to):
    """Rate between the first completion at or after T_FROM and the last at or before T_TO."""
    pts = [(t, u) for t, u in log if t_from <= t <= t_to]
    if len(pts) < 2 or pts[-1][0] <= pts[0][0]:
        return 0.0
    return (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])


class Boot:
    """Bootstrap draws, reproducible from a seed."""

    def __init__(self, n, seed=7):
        self.n, self.rng = n, random.Random(seed)
        self.np = np.random.default_rng(seed) if np is not None else None

    def quantile_draws(self, reps, q):
        """N draws of the pooled q-quantile, each repeat's samples resampled within it."""
        if self.np is not None:
            arrs = [np.asarray(r, dtype=float) for r in reps if len(r)]
            total = sum(len(a) for a in arrs)
            k = min(total, max(1, math.ceil(q * total))) - 1
            out = []
            for _ in range(self.n):
                pooled = np.concatenate([a[self.np.integers(0, len(a), len(a))] for a in arrs])
                out.append(float(np.partition(pooled, k)[k]))
            return out
        out = []
        for _ in range(self.n):
            pooled = []
            for r in reps:
                pooled += self.rng.choices(r, k=len(r))
            out.append(pct(pooled, q))
        return out

    def mean_draws(self, items):
        """N draws of sum(a) / sum(b) over ITEMS [(a, b)] resampled."""
        out = []
        for _ in range(self.n):
            pick = self.rng.choices(items, k=len(items))
            den = sum(b for _, b in pick)
            out.append(sum(a for a, _ in pick) / den if den else 0.0)
        return out


def interval(draws):
    """The 90 % interval of bootstrap draws."""
    s = sorted(draws)
    return s[int(0.05 * (len(s) - 1))], s[int(math.ceil(0.95 * (len(s) - 1)))]


def judge(est, lo, hi, bound, upper=True, lower_bound=False):
    """A bound's verdict (SPEC.md): the whole 90 % interval [LO, HI] at or under BOUND (UPPER;
    else at or over) holds, the whole interval beyond it fails, anything else (an estimate
    without an interval included) is undecided; a lower-bound estimate never holds."""
    if est is None:
        return UNDECIDED
    if upper:
        if lo is not None and lo > bound:
            return FAILS
        return HOLDS if hi is not None and hi <= bound and not lower_bound else UNDECIDED
    if hi is not None and hi < bound:
        return FAILS
    return HOLDS if lo is not None and lo >= bound else UNDECIDED


def both(*verdicts):
    if FAILS in verdicts:
        return FAILS
    return HOLDS if all(v == HOLDS for v in verdicts) else UNDECIDED


def raw_paths(d):
    """DIR's raw files, as the matrix writes them (raw-*.json) or as the docs keep them
    (raw-*.json.gz)."""
    return sorted(glob.glob(os.path.join(d, "raw-*.json")) + glob.glob(os.path.join(d, "raw-*.json.gz")))


def load(paths, skip=0):
    """Every raw file's records (each measurement's first SKIP samples dropped), the services'
    calibration per setup, machines and commits."""
    recs, services, machines, commits, skipped, notes = [], {}, [], set(), [], []
    for p in paths:
        with gzip.open(p, "rt") if p.endswith(".gz") else open(p) as f:
            raw = json.load(f)
        if raw.get("schema") != "baton.matrix-raw/2":
            raise SystemExit(f"{p}: not a second-edition raw file ({raw.get('schema')})")
        for r in raw["records"]:
            if skip and r.get("lat_ms"):
                r = dict(r, lat_ms=r["lat_ms"][skip:], skipped_samples=skip)
            recs.append(r)
        for setup, svc in raw.get("services", {}).items():
            services.setdefault(setup, {}).update(svc)
        machines.append(raw.get("machine"))
        commits.add(raw.get("commit"))
        skipped += raw.get("skipped", [])
        notes += raw.get("notes", [])
    return recs, services, machines, sorted(c for c in commits if c), skipped, notes


def ok(r):
    return "error" not in r and r.get("lat_ms")


def arrivals(rate, count, seed):
    """COUNT planned arrival offsets (seconds) of a Poisson process of RATE per second: the
    schedule services.py serves from a measurement's seed, which every mode of a repeat shares
    with the service's run alone."""
    rng, t, out = random.Random(seed), 0.0, []
    for _ in range(count):
        t += rng.expovariate(rate)
        out.append(t)
    return out


# The services whose sorted order gave each measurement's seed (1000 x repeat + its index)
# before the measurements recorded their seed.
SEEDED_SERVICES = sorted(("Rg25", "Rg60", "Dg", "Be"))


def request_times(r, rate):
    """A measurement of one sample a request, as its server saw each request: whether it found
    the server idle (it arrived once the request before had ended) and its service time (from
    when it could start, its arrival or the end of the request before, to its end; ms). From
    the planned arrivals and the latencies, which count from them. None where a sample is not a
    request (a decoder's tokens), samples were censored, or the schedule is unknown."""
    lat = r["lat_ms"]
    seed = r.get("seed")
    if seed is None and r.get("hp") in SEEDED_SERVICES and r.get("rep") is not None:
        seed = 1000 * r["rep"] + SEEDED_SERVICES.index(r["hp"])
    rate = r.get("rate") or rate
    if r.get("censored") or r.get("requests") != len(lat) or seed is None or not rate:
        return None
    out, prev = [], -math.inf
    for a, latency in zip(arrivals(rate, len(lat), seed), lat, strict=True):
        at = a * 1e3
        end = at + latency
        out.append((at >= prev, end - max(at, prev)))
        prev = end
    return out


# The per-request series a measurement may carry (services.py's GpuSpan), split as the service
# times are: "gpu", its span on the GPU (MATRIX_GPU_TIME: a hand-over at the request's start is
# outside it, anything the GPU does to the request between two of its kernels inside); "start",
# from the host's call to the GPU's start of its work (MATRIX_GPU_START: the hand-over itself).
SERIES = {"gpu": "gpu_ms", "start": "gpu_pre_ms"}
SERIES_HEADS = {"gpu": "on the GPU", "start": "start on the GPU after the call"}


def service_fields(rs, base, rate):
    """Where a request's time goes beside the job: the median service time of the requests that
    found the server idle and of those that queued behind another, in the cell and alone (same
    arrivals). A request that finds the server idle pays whatever hands the GPU to the service;
    a queued one starts as the one before ends, so what it adds over alone is what the service's
    own work lost beside the job (the GPU leaving the service's context during or between its
    requests, or running slower beside the job)."""

    def split(measurements):
        """(idle, queued) service times and, for each per-request series in SERIES that every
        measurement has, its (idle, queued) values."""
        idle, queued = [], []
        series = {
            k: ([], [])
            for k, field in SERIES.items()
            if all(len(r.get(field) or []) == len(r["lat_ms"]) for r in measurements)
        }
        for r in measurements:
            t = request_times(r, rate)
            if t is None:
                return None
            for i, (found_idle, svc) in enumerate(t):
                (idle if found_idle else queued).append(svc)
                for k, (si, sq) in series.items():
                    (si if found_idle else sq).append(r[SERIES[k]][i])
        return idle, queued, series

    cell, alone = split(rs), split(base)
    if not cell or not alone or not all(cell[:2]) or not all(alone[:2]):
        return {}
    out = {
        "svc_idle_p50_ms": pct(cell[0], 0.50),
        "svc_queued_p50_ms": pct(cell[1], 0.50),
        "alone_svc_idle_p50_ms": pct(alone[0], 0.50),
        "alone_svc_queued_p50_ms": pct(alone[1], 0.50),
        "requests_idle": len(cell[0]),
        "requests_queued": len(cell[1]),
    }
    for k, (ci, cq) in cell[2].items():
        ai, aq = alone[2].get(k, ([], []))
        if ci and cq and ai and aq:
            out.update(
                {
                    f"{k}_idle_p50_ms": pct(ci, 0.50),
                    f"{k}_queued_p50_ms": pct(cq, 0.50),
                    f"alone_{k}_idle_p50_ms": pct(ai, 0.50),
                    f"alone_{k}_queued_p50_ms": pct(aq, 0.50),
                }
            )
    return out


def start_by_position(r, rate=None):
    """{place in the busy period (0 idle, 1..4, 5 for the fifth queued and later): median start
    on the GPU after the host's call (ms)} of a measurement with MATRIX_GPU_START's series;
    None without it or without its arrivals. A job's work on the GPU drains in a busy period's
    hand-overs, so the later places say whether the cost outlasts it."""
    pre = r.get("gpu_pre_ms")
    t = request_times(r, rate) if pre and ok(r) else None
    if t is None or len(pre) != len(t):
        return None
    place, by = 0, {}
    for (found_idle, _), v in zip(t, pre, strict=True):
        place = 0 if found_idle else place + 1
        by.setdefault(min(place, 5), []).append(v)
    return {k: median(v) for k, v in sorted(by.items())}


def positions(d):
    """Prints start_by_position for every measurement of DIR's raw files that has it."""
    recs, *_ = load(raw_paths(d))
    for r in recs:
        by = start_by_position(r)
        if by:
            where = f"{r.get('kind')} {r.get('hp')} {r.get('mode') or ''} {r.get('be') or ''} rep {r.get('rep')}"
            print(f"{where:40} " + "  ".join(f"{k}: {v:.3f}" for k, v in by.items()))


def token_split(rs):
    """A multi-token service's samples split into each request's first token and the rest
    (samples are in request order, the same number a request); None where a measurement is
    not so (one sample a request, or censored samples standing for unstarted requests)."""
    first, rest = [], []
    for r in rs:
        lat, n = r["lat_ms"], r.get("requests") or 0
        if r.get("censored", 0) or n <= 0 or len(lat) <= n or len(lat) % n:
            return None
        per = len(lat) // n
        first += lat[::per]
        rest += [x for i, x in enumerate(lat) if i % per]
    return first, rest


def token_fields(rs, base):
    """For a multi-token service, how its first tokens (median) and its later tokens (p99) compare
    with alone's: where a tail comes from (a decoder's p99 is mostly its first tokens, the ones
    that wait for whatever else the GPU was doing when the request arrived)."""
    cell, alone = token_split(rs), token_split(base)
    if not cell or not alone:
        return {}
    return {
        "first_token_p50_ratio": pct(cell[0], 0.50) / pct(alone[0], 0.50),
        "later_tokens_p99_ratio": pct(cell[1], 0.99) / pct(alone[1], 0.99),
    }


def summarize(recs, services, boot):
    """One entry per (setup, service, job, mode, pinned) that has samples."""
    alone, cells, jobs = {}, {}, {}
    for r in recs:
        pinned = r.get("pinned", True)
        if r["kind"] == "alone" and ok(r):
            alone.setdefault((r["setup"], r["hp"], pinned), []).append(r)
        elif r["kind"] == "cell" and ok(r):
            cells.setdefault((r["setup"], r["hp"], r["be"], r["mode"], pinned), []).append(r)
        elif r["kind"] == "job_alone" and "error" not in r and r.get("rate"):
            jobs.setdefault((r["setup"], r["be"], pinned), []).append(r["rate"])
    out = []
    for (setup, hp, be, mode, pinned), rs in sorted(cells.items()):
        base = alone.get((setup, hp, pinned))
        if not base:
            continue
        reps = [r["lat_ms"] for r in rs]
        pooled = [x for r in reps for x in r]
        alone_reps = [r["lat_ms"] for r in base]
        alone_pooled = [x for r in alone_reps for x in r]
        censored = sum(r.get("censored", 0) for r in rs)
        a99, a50 = pct(alone_pooled, 0.99), pct(alone_pooled, 0.50)
        c99 = pct(pooled, 0.99)
        cdraws = boot.quantile_draws(reps, 0.99)
        adraws = boot.quantile_draws(alone_reps, 0.99)
        ratio_draws = [c / a for c, a in zip(cdraws, adraws, strict=True)]
        lo, hi = interval(ratio_draws)
        svc = services.get(setup, {}).get(hp, {})
        job_rate = median(jobs.get((setup, be, pinned), []))
        windows = [(r["be_units"], r["be_seconds"]) for r in rs if r.get("be_covered") and r.get("be_seconds")]
        share = share_lo = share_hi = None
        if job_rate and windows:
            share = sum(u for u, _ in windows) / sum(s for _, s in windows) / job_rate
            share_lo, share_hi = (x / job_rate for x in interval(boot.mean_draws(windows)))
        out.append(
            {
                "setup": setup,
                "hp": hp,
                "be": be,
                "mode": mode,
                "pinned": pinned,
                "load": svc.get("load"),
                "repeats": len(rs),
                "samples": len(pooled),
                "censored": censored,
                "alone_samples": len(alone_pooled),
                "hp_p99_ms": c99,
                "hp_p50_ms": pct(pooled, 0.50),
                "alone_p99_ms": a99,
                "alone_p50_ms": a50,
                "hp_p99_ratio": c99 / a99,
                "hp_p99_ratio_lo": lo,
                "hp_p99_ratio_hi": hi,
                "hp_p50_ratio": pct(pooled, 0.50) / a50,
                "p99_lower_bound": censored > 0.01 * len(pooled),
                "be_share_alone": share,
                "be_share_alone_lo": share_lo,
                "be_share_alone_hi": share_hi,
                "hp_gpu_busy": svc.get("busy"),
                **token_fields(rs, base),
                **service_fields(rs, base, svc.get("rate")),
                "_draws": cdraws,
                "_windows": windows,
                "_job_rate": job_rate,
            }
        )
    by_key = {(c["setup"], c["hp"], c["be"], c["mode"], c["pinned"]): c for c in out}
    for c in out:
        verdicts(c, by_key, boot)
    for c in out:
        for k in ("_draws", "_windows", "_job_rate"):
            c.pop(k, None)
    return out


def verdicts(c, by_key, boot):
    """Fills C's comparisons with native (and native-split) and its three rules."""
    key = (c["setup"], c["hp"], c["be"])
    native = by_key.get((*key, "native", c["pinned"]))
    split = by_key.get((*key, "native-split", c["pinned"]))
    lb = c["p99_lower_bound"]
    c["be_share_native"] = c["hp_p99_vs_native"] = None
    if native and native is not c:
        draws = [x / y for x, y in zip(c["_draws"], native["_draws"], strict=True)]
        c["hp_p99_vs_native"] = c["hp_p99_ms"] / native["hp_p99_ms"]
        c["hp_p99_vs_native_lo"], c["hp_p99_vs_native_hi"] = interval(draws)
        if c["be_share_alone"] is not None and native["be_share_alone"]:
            c["be_share_native"] = c["be_share_alone"] / native["be_share_alone"]
            nat = native["_windows"]
            mine = c["_windows"]
            ratio_draws = []
            for a, b in zip(boot.mean_draws(mine), boot.mean_draws(nat), strict=True):
                ratio_draws.append(a / b if b else 0.0)
            c["be_share_native_lo"], c["be_share_native_hi"] = interval(ratio_draws)
    # The reference: alone, or in one process native-split.
    if c["setup"] == "P" and c["mode"] != "native-split":
        if not split:
            c["protect"] = c["no_harm"] = c["work_conserving"] = NA
            c["reference"] = "native-split (not measured)"
            return
        draws = [x / y for x, y in zip(c["_draws"], split["_draws"], strict=True)]
        ref, (rlo, rhi) = c["hp_p99_ms"] / split["hp_p99_ms"], interval(draws)
        c["reference"] = "native-split"
    else:
        ref, rlo, rhi = c["hp_p99_ratio"], c["hp_p99_ratio_lo"], c["hp_p99_ratio_hi"]
        c["reference"] = "alone"
    c["hp_p99_ratio_ref"], c["hp_p99_ratio_ref_lo"], c["hp_p99_ratio_ref_hi"] = ref, rlo, rhi
    bound = judge(ref, rlo, rhi, PROTECT, lower_bound=lb)
    if c["mode"] in ("native", "native-split"):
        c["protect"] = bound
    else:
        vs = (
            judge(
                c["hp_p99_vs_native"], c.get("hp_p99_vs_native_lo"), c.get("hp_p99_vs_native_hi"), 1.0, lower_bound=lb
            )
            if native
            else UNDECIDED
        )
        c["protect"] = both(bound, vs)
    # Which job rule applies follows native's own protection (against the same reference).
    nat_ref = ref
    if native and native is not c:
        nat_ref = native["hp_p99_ms"] / (
            split["hp_p99_ms"] if c["reference"] == "native-split" else native["alone_p99_ms"]
        )
    c["native_ref"] = nat_ref
    busy = c["hp_gpu_busy"]
    c["wc_bound"] = WORK_CONSERVING * (1 - busy) if busy is not None else None
    if c["mode"] in ("native", "native-split"):
        c["no_harm"] = NA
        c["work_conserving"] = (
            judge(c["be_share_alone"], c["be_share_alone_lo"], c["be_share_alone_hi"], c["wc_bound"], upper=False)
            if c["wc_bound"] is not None
            else UNDECIDED
        )
        return
    if nat_ref is not None and nat_ref <= PROTECT:
        c["no_harm"] = judge(
            c["be_share_native"], c.get("be_share_native_lo"), c.get("be_share_native_hi"), NO_HARM, upper=False
        )
        c["work_conserving"] = NA
    else:
        c["no_harm"] = NA
        c["work_conserving"] = (
            judge(c["be_share_alone"], c["be_share_alone_lo"], c["be_share_alone_hi"], c["wc_bound"], upper=False)
            if c["wc_bound"] is not None
            else UNDECIDED
        )
    if native and native is not c and c["reference"] == "alone":
        c["rule_in_doubt"] = native["hp_p99_ratio_lo"] <= PROTECT < native["hp_p99_ratio_hi"]


def cell_verdict(c):
    job = c["no_harm"] if c["no_harm"] != NA else c["work_conserving"]
    return both(c["protect"], job)


def fmt_ratio(c, key):
    v = c.get(key)
    if v is None:
        return "—"
    lo, hi = c.get(key + "_lo"), c.get(key + "_hi")
    lb = "≥" if c.get("p99_lower_bound") and key.startswith("hp_p99") else ""
    return f"{lb}×{v:.2f}" + (f" ({lo:.2f}–{hi:.2f})" if lo is not None else "")


def fmt_share(v):
    return "—" if v is None else f"{100 * v:.0f} %"


def table(cells, modes):
    """The table: one row per (setup, service, job, pinned), native beside each other mode."""
    lines = []
    rows = {}
    for c in cells:
        rows.setdefault((c["setup"], c["pinned"], c["hp"], c["be"]), {})[c["mode"]] = c
    order = {s: i for i, s in enumerate("SMP")}
    svc_order = {s: i for i, s in enumerate(SERVICE_NAMES)}
    for pinned in (True, False):
        keys = sorted(
            (k for k in rows if k[1] == pinned), key=lambda k: (order.get(k[0], 9), svc_order.get(k[2], 9), k[3])
        )
        if not keys:
            continue
        lines.append("" if pinned else "\nAs users run it (nothing pinned; one repeat where the page says no more):\n")
        others = [m for m in modes if m != "native" and any(m in rows[k] for k in keys)]
        head = "| setup | service / job | native: p99 × alone (90 % interval), p50 ×, job % of alone |"
        sep = "| --- | --- | --- |"
        for m in others:
            head += f" {m}: p99 × alone, × native, job % alone / % native | {m}: protect, job rule |"
            sep += " --- | --- |"
        lines += [head, sep]
        for k in keys:
            r = rows[k]
            n = r.get("native")
            row = f"| {k[0]} | {k[2]} / {k[3]} | "
            row += (
                f"{fmt_ratio(n, 'hp_p99_ratio')}, ×{n['hp_p50_ratio']:.2f}, {fmt_share(n['be_share_alone'])}"
                if n
                else "—"
            ) + " |"
            for m in others:
                c = r.get(m)
                if not c:
                    row += " — | — |"
                    continue
                row += (
                    f" {fmt_ratio(c, 'hp_p99_ratio')}, {fmt_ratio(c, 'hp_p99_vs_native')}, "
                    f"{fmt_share(c['be_share_alone'])} / {fmt_share(c['be_share_native'])} |"
                )
                job = ("no harm " + c["no_harm"]) if c["no_harm"] != NA else ("work-conserving " + c["work_conserving"])
                ref = " (vs native-split)" if c.get("reference") == "native-split" else ""
                row += f" protect {c['protect']}{ref}, {job}{' (rule in doubt)' if c.get('rule_in_doubt') else ''} |"
            lines.append(row)
    tokens = [c for c in cells if "first_token_p50_ratio" in c]
    if tokens:
        lines += [
            "\nMulti-token services, each request's first token and the rest (× alone's):\n",
            "| setup | service / job | mode | pinned | first token p50 × | later tokens p99 × |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for c in sorted(tokens, key=lambda c: (not c["pinned"], c["setup"], c["hp"], c["be"], c["mode"])):
            lines.append(
                f"| {c['setup']} | {c['hp']} / {c['be']} | {c['mode']} | {'yes' if c['pinned'] else 'no'} | "
                f"×{c['first_token_p50_ratio']:.2f} | ×{c['later_tokens_p99_ratio']:.2f} |"
            )
    served = [c for c in cells if "svc_queued_p50_ms" in c and c["mode"] != "native"]
    if served:
        lines += [
            "\nWhere a request's time goes (one request a sample): the median service time, from when"
            " a request could start (its arrival, or the end of the one before) to its end, of the"
            " requests that found the server idle and of those that queued, alone and in the cell"
            " (same arrivals), ms:\n",
        ]
        shown = [k for k in SERIES if any(f"{k}_queued_p50_ms" in c for c in served)]
        head = "| setup | service / job | mode | pinned | found it idle: alone, cell (change) | queued: alone, cell (change) |"
        sep = "| --- | --- | --- | --- | --- | --- |"
        for k in shown:
            what = SERIES_HEADS[k]
            head += f" {what}, found it idle | {what}, queued |"
            sep += " --- | --- |"
        lines += [head, sep]
        for c in sorted(served, key=lambda c: (not c["pinned"], c["setup"], c["hp"], c["be"], c["mode"])):
            ai, ci = c["alone_svc_idle_p50_ms"], c["svc_idle_p50_ms"]
            aq, cq = c["alone_svc_queued_p50_ms"], c["svc_queued_p50_ms"]
            row = (
                f"| {c['setup']} | {c['hp']} / {c['be']} | {c['mode']} | {'yes' if c['pinned'] else 'no'} | "
                f"{ai:.2f}, {ci:.2f} ({ci - ai:+.2f}) | {aq:.2f}, {cq:.2f} ({cq - aq:+.2f}) |"
            )
            for k in shown:
                row += "".join(
                    f" {c[f'alone_{k}_{w}_p50_ms']:.2f}, {c[f'{k}_{w}_p50_ms']:.2f} |"
                    if f"{k}_{w}_p50_ms" in c
                    else " — |"
                    for w in ("idle", "queued")
                )
            lines.append(row)
    return "\n".join(lines)


def counts(cells, mode="baton"):
    mine = [c for c in cells if c["mode"] == mode and c["pinned"]]
    verdicts = [cell_verdict(c) for c in mine]
    return {
        "cells": len(mine),
        "held": verdicts.count(HOLDS),
        "failed": verdicts.count(FAILS),
        "undecided": verdicts.count(UNDECIDED),
        "protect_held": sum(c["protect"] == HOLDS for c in mine),
        "protect_failed": sum(c["protect"] == FAILS for c in mine),
    }


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--self-test":
        return self_test()
    if len(argv) == 2 and argv[0] == "--positions":
        return positions(argv[1])
    opts = {"--boot": 1000, "--skip": 0}
    for name in opts:
        if name in argv:
            i = argv.index(name)
            opts[name] = int(argv[i + 1])
            argv = argv[:i] + argv[i + 2 :]
    boot_n, skip = opts["--boot"], opts["--skip"]
    if len(argv) != 1:
        sys.exit(__doc__)
    d = argv[0]
    paths = raw_paths(d)
    if not paths:
        sys.exit(f"{d}: no raw-*.json or raw-*.json.gz")
    recs, services, machines, commits, skipped, notes = load(paths, skip)
    cells = summarize(recs, services, Boot(boot_n))
    modes = []
    for c in cells:
        if c["mode"] not in modes:
            modes.append(c["mode"])
    modes.sort(key=lambda m: (m != "native", m != "native-split", m != "baton", m))
    for c in cells:
        c["verdict"] = cell_verdict(c)
    summary = {
        "schema": "baton.matrix-summary/2",
        "commits": commits,
        "machines": machines,
        "skipped_samples": skip,
        "raw": [os.path.basename(p) for p in paths],
        "services": services,
        "counts": {m: counts(cells, m) for m in modes if m not in ("native", "native-split")},
        "skipped": skipped,
        "notes": notes,
        "cells": cells,
    }
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    t = table(cells, modes)
    n = summary["counts"].get("baton")
    head = (
        f"Commit(s) {', '.join(commits) or 'unknown'}; {len(paths)} raw file(s)"
        + (f", the first {skip} samples of each measurement dropped" if skip else "")
        + ". "
        + (
            f"baton: {n['held']} of {n['cells']} cells hold (protect holds in {n['protect_held']}, "
            f"fails in {n['protect_failed']}); {n['failed']} fail, {n['undecided']} undecided."
            if n
            else ""
        )
    )
    with open(os.path.join(d, "table.md"), "w") as f:
        f.write(head + "\n\n" + t + "\n")
    print(head)
    print(t)
    return summary


def self_test():
    """The statistics and the verdicts on made-up raw data, with known answers."""
    assert pct([5, 1, 3, 2, 4], 0.5) == 3 and pct(list(range(1, 101)), 0.99) == 99
    assert judge(1.05, 1.0, 1.08, 1.10) == HOLDS and judge(1.2, 1.12, 1.3, 1.10) == FAILS
    # An estimate under the bound whose interval reaches above it is not a result.
    assert judge(1.05, 1.0, 1.2, 1.10) == UNDECIDED and judge(1.05, None, None, 1.10) == UNDECIDED
    assert judge(0.85, 0.79, 0.9, 0.8, upper=False) == UNDECIDED
    assert judge(1.2, 1.05, 1.3, 1.10) == UNDECIDED and judge(1.05, 1.0, 1.2, 1.10, lower_bound=True) == UNDECIDED
    assert judge(0.85, 0.8, 0.9, 0.8, upper=False) == HOLDS and judge(0.7, 0.6, 0.75, 0.8, upper=False) == FAILS
    assert both(HOLDS, UNDECIDED) == UNDECIDED and both(HOLDS, FAILS) == FAILS and both(HOLDS, HOLDS) == HOLDS
    log = [[0.0, 0.0], [1.0, 10.0], [2.0, 20.0]]
    assert window_progress(log, 0.5, 1.5) == {"units": 10.0, "covered": True}
    assert not window_progress(log, 0.5, 2.5)["covered"]
    rng = random.Random(3)

    def samples(scale, n=1000):
        return [round(scale * (1 + rng.expovariate(4)), 4) for _ in range(n)]

    recs = []
    # Rg25 in S: native x2 slower, baton x1.02 (holds); the job at 90 % of alone natively, 70 %
    # under baton (native does not protect: work-conserving applies, 0.8 x 0.75 = 60 %: holds).
    # Be in S: native x1.0, baton x1.0 with the job at 60 % of native's (no harm fails).
    for rep in range(3):
        for hp, alone in (("Rg25", 1.0), ("Be", 4.0)):
            recs.append(
                {
                    "kind": "alone",
                    "setup": "S",
                    "mode": "native",
                    "rep": rep,
                    "hp": hp,
                    "pinned": True,
                    "lat_ms": samples(alone),
                }
            )
            for mode, slow, share in (
                ("native", 2.0 if hp == "Rg25" else 1.0, 0.9),
                ("baton", 1.02 if hp == "Rg25" else 1.0, 0.7 if hp == "Rg25" else 0.54),
            ):
                recs.append(
                    {
                        "kind": "cell",
                        "setup": "S",
                        "mode": mode,
                        "rep": rep,
                        "hp": hp,
                        "be": "G",
                        "pinned": True,
                        "lat_ms": samples(alone * slow),
                        "censored": 0,
                        "be_units": 100 * share * 10,
                        "be_seconds": 10.0,
                        "be_covered": True,
                    }
                )
        recs.append(
            {"kind": "job_alone", "setup": "S", "mode": "native", "rep": rep, "be": "G", "pinned": True, "rate": 100.0}
        )
    services = {"S": {"Rg25": {"load": 0.25, "busy": 0.25}, "Be": {"load": 0.4, "busy": 0.05}}}
    cells = summarize(recs, services, Boot(200))
    by = {(c["hp"], c["mode"]): c for c in cells}
    rg, be = by[("Rg25", "baton")], by[("Be", "baton")]
    assert rg["samples"] == 3000 and abs(rg["hp_p99_ratio"] - 1.02) < 0.12, rg
    assert rg["hp_p99_ratio_lo"] < rg["hp_p99_ratio"] < rg["hp_p99_ratio_hi"], rg
    assert by[("Rg25", "native")]["protect"] == FAILS, by[("Rg25", "native")]
    assert rg["work_conserving"] == HOLDS and rg["no_harm"] == NA, rg
    assert abs(rg["be_share_alone"] - 0.7) < 1e-9 and abs(rg["wc_bound"] - 0.6) < 1e-9, rg
    assert be["no_harm"] == FAILS and be["work_conserving"] == NA, be
    assert cell_verdict(be) == FAILS
    # A p99 that censored samples decide is a lower bound: it never holds.
    lb = [
        dict(r, censored=200) if r["kind"] == "cell" and r["hp"] == "Rg25" and r["mode"] == "baton" else r for r in recs
    ]
    c = {(c["hp"], c["mode"]): c for c in summarize(lb, services, Boot(100))}[("Rg25", "baton")]
    assert c["p99_lower_bound"] and c["protect"] != HOLDS, c
    assert "Rg25 / G" in table(cells, ["native", "baton"])
    # A decoder of 4 tokens a request: alone every token 2 ms but the first 3; beside the job the
    # first token 4.5 ms (x1.5), the rest unchanged.
    dec = lambda first: {"lat_ms": [first, 2.0, 2.0, 2.0] * 250, "requests": 250, "censored": 0}  # noqa: E731
    t = token_fields([dec(4.5)], [dec(3.0)])
    assert abs(t["first_token_p50_ratio"] - 1.5) < 1e-9 and abs(t["later_tokens_p99_ratio"] - 1.0) < 1e-9, t
    assert token_fields([dict(dec(4.5), censored=1)], [dec(3.0)]) == {}
    assert token_split([{"lat_ms": [1.0, 2.0], "requests": 2}]) is None

    # A server of 1 ms requests, alone, and one whose every request takes 0.5 ms more beside the
    # job when queued and 0.3 ms more when it found the server idle (a hand-over): the same
    # arrivals, 500 a second.
    def served(idle_extra, queued_extra, n=2000):
        lat, prev = [], -math.inf
        for a in arrivals(500.0, n, 11):
            at = a * 1e3
            end = (at + 1.0 + idle_extra) if at >= prev else (prev + 1.0 + queued_extra)
            lat.append(end - at)
            prev = end
        return {"lat_ms": lat, "requests": n, "censored": 0, "seed": 11, "rate": 500.0}

    f = service_fields([served(0.3, 0.5)], [served(0.0, 0.0)], None)
    assert "gpu_queued_p50_ms" not in f, f
    assert f["requests_idle"] > 100 and f["requests_queued"] > 100, f
    assert abs(f["alone_svc_idle_p50_ms"] - 1.0) < 1e-6 and abs(f["alone_svc_queued_p50_ms"] - 1.0) < 1e-6, f
    assert abs(f["svc_idle_p50_ms"] - 1.3) < 1e-6 and abs(f["svc_queued_p50_ms"] - 1.5) < 1e-6, f

    # A measurement with a per-request series (SERIES' field) of one value for the requests
    # that found the server idle and another for the queued ones.
    def with_series(m, field, idle, queued):
        t = request_times(m, None)
        return dict(m, **{field: [idle if found_idle else queued for found_idle, _ in t]})

    # With spans on the GPU (MATRIX_GPU_TIME): the idle arrivals' hand-over is outside them,
    # the queued requests' 0.5 ms inside.
    def spanned(m, idle_gpu, queued_gpu):
        return with_series(m, "gpu_ms", idle_gpu, queued_gpu)

    g = service_fields([spanned(served(0.3, 0.5), 1.0, 1.5)], [spanned(served(0.0, 0.0), 1.0, 1.0)], None)
    assert (g["gpu_idle_p50_ms"], g["gpu_queued_p50_ms"], g["alone_gpu_queued_p50_ms"]) == (1.0, 1.5, 1.0), g
    assert "on the GPU, queued" in table([dict(c, **g) for c in cells if c["mode"] == "baton"], ["baton"])
    assert "start_queued_p50_ms" not in g, g

    # And with each request's start on the GPU (MATRIX_GPU_START): the 0.3 ms hand-over there.
    def started(m, idle_pre, queued_pre):
        return with_series(m, "gpu_pre_ms", idle_pre, queued_pre)

    h = service_fields(
        [started(spanned(served(0.3, 0.5), 1.0, 1.5), 0.35, 0.05)],
        [started(spanned(served(0.0, 0.0), 1.0, 1.0), 0.05, 0.05)],
        None,
    )
    assert (h["start_idle_p50_ms"], h["start_queued_p50_ms"], h["alone_start_idle_p50_ms"]) == (0.35, 0.05, 0.05), h
    by = start_by_position(started(served(0.3, 0.5), 0.35, 0.05))
    assert by[0] == 0.35 and by[1] == 0.05 and max(by) <= 5, by
    assert start_by_position(served(0.3, 0.5)) is None
    shown = table([dict(c, **h) for c in cells if c["mode"] == "baton"], ["baton"])
    assert "start on the GPU after the call, queued" in shown and "| 0.05, 0.35 |" in shown, shown
    assert service_fields([dict(served(0.3, 0.5), censored=1)], [served(0.0, 0.0)], None) == {}
    assert request_times({"lat_ms": [1.0] * 8, "requests": 2, "censored": 0, "seed": 1, "rate": 1.0}, None) is None
    # Before measurements recorded their seed: 1000 x repeat + the service's index.
    legacy = request_times({"lat_ms": [0.5], "requests": 1, "hp": "Rg25", "rep": 2}, 100.0)
    assert legacy == [(True, 0.5)], legacy
    recorded = recorded_check()
    print(
        f"matrix analysis self-test: ok ({len(cells)} cells, {recorded} recorded cells reproduced; "
        f"numpy {'used' if np is not None else 'absent'})"
    )


def recorded_check():
    """The committed run's summary follows from its committed raw files (`headline/` in the
    page's runs.tar.xz): every cell's pooled estimates, and every verdict whose interval is not
    within a few draws of its bound (the bootstrap here takes fewer draws than the committed
    analysis)."""
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs", "benchmarks", "matrix")
    with open(os.path.join(d, "summary.json")) as f:
        committed = {(c["setup"], c["hp"], c["be"], c["mode"], c["pinned"]): c for c in json.load(f)["cells"]}
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(os.path.join(d, "runs.tar.xz")) as tar:
            members = [m for m in tar.getmembers() if m.isfile() and m.name.startswith("headline/")]
            # The extraction filter where this Python has it (3.11.4 and newer).
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(tmp, members=members, **safe)
        paths = raw_paths(os.path.join(tmp, "headline"))
        assert paths, "runs.tar.xz holds no headline/ raw files"
        recs, services, *_ = load(paths)
    cells = summarize(recs, services, Boot(100))
    assert len(cells) == len(committed) > 0, (len(cells), len(committed))
    for c in cells:
        k = committed[(c["setup"], c["hp"], c["be"], c["mode"], c["pinned"])]
        for f in ("samples", "censored", "hp_p99_ms", "hp_p50_ms", "hp_p99_ratio", "be_share_alone"):
            assert c[f] == k[f] or abs(c[f] - k[f]) < 1e-9, (f, c[f], k[f])
        if c["mode"] == "baton" and k["protect"] == NA:
            # No reference was measured (one process's native-split on a machine of one GPU).
            assert c["protect"] == NA, (c["setup"], c["hp"], c["be"], c["protect"])
        elif c["mode"] == "baton" and k["protect"] != UNDECIDED:
            lo, hi = k["hp_p99_ratio_ref_lo"], k["hp_p99_ratio_ref_hi"]
            nlo, nhi = k.get("hp_p99_vs_native_lo", 0), k.get("hp_p99_vs_native_hi", 0)
            # The 5th percentile of 100 draws strays a few % from that of the committed
            # analysis's draws: a verdict whose interval ends that near its bound may differ.
            if not (lo <= PROTECT * 1.05 and hi >= PROTECT * 0.95) and not (nlo <= 1.05 and nhi >= 0.95):
                assert c["protect"] == k["protect"], (c["setup"], c["hp"], c["be"], c["protect"], k["protect"])
    return len(cells)


if __name__ == "__main__":
    main()
