#!/usr/bin/env python3
"""Preemption latency from the GPU's own clock (scripts/gpu/levels/preempt_probe.cu's traces).

  preemption_timeline.py BE_TIMELINE.bin HP_REQUESTS.csv [HP_ALONE_REQUESTS.csv] -> JSON
  preemption_timeline.py --self-test

For each latency-critical request, measured from its launch (the moment that makes Baton
suspend the best-effort process):
  hp_start_us  until HP's kernel started on the GPU;
  be_stop_us   until the best-effort process stopped occupying the GPU: the end of the
               stretch of best-effort execution the request arrived in (a kernel's end
               with no other kernel following at once, or the GPU switching the context
               out). 0 when it was not running at the launch.

The two processes share the GPU's clock (%globaltimer); HP's launch is on the host's clock.
Every request bounds the offset between the two: its kernel started after its launch
(offset <= start - launch) and ended before the host saw it done (offset >= end - done).
The two clocks drift apart (~18 µs/s on an H100), so the bounds are fitted as lines over the
run, through the tightest request of each stretch of it. Beside a best-effort process every
start is delayed, so only the lower line is tight: it is the offset minus the shortest
completion latency (kernel end -> host sees it). That latency is at most the shortest
launch-plus-completion time of HP running alone, which needs no offset ((done - launch) -
(end - start)); with HP_ALONE_REQUESTS.csv the offset is the lower line plus half of that,
give or take the other half and the fit's scatter (`clock_uncertainty_us`). Without it, the
midpoint of the two lines is used. `switch_us` (HP's start minus BE's stop, both on the
GPU's clock) needs no offset at all.
Stdlib only, so that CI can run the self-test.
"""

import bisect
import csv
import json
import struct
import sys

WORDS = 16  # per kernel, as preempt_probe.cu's TIMELINE_WORDS
MAX_GAPS = 6
MERGE_NS = 10_000  # best-effort stretches closer than this count as one (launch gaps)


def busy_stretches(words):
    """Best-effort execution as sorted, merged (start, end) stretches in GPU ns, from the
    probe's per-kernel records (start, end, gap count, 0, gap pairs...)."""
    spans = []
    for k in range(0, len(words) - WORDS + 1, WORDS):
        start, end, gaps = words[k], words[k + 1], words[k + 2]
        if end == 0 or end < start:
            continue  # never ran (the buffer is zeroed)
        cur = start
        for g in range(min(gaps, MAX_GAPS)):
            gs, ge = words[k + 4 + 2 * g], words[k + 5 + 2 * g]
            spans.append((cur, gs))
            cur = ge
        spans.append((cur, end))
    spans.sort()
    merged = []
    for s, e in spans:
        if merged and s - merged[-1][1] <= MERGE_NS:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def envelope(points, pick):
    """A line y = m x + b through the tightest point (PICK: max or min of y) of each tenth of
    POINTS (x, y), and the largest distance of those points from it."""
    points = sorted(points)
    n = max(1, min(10, len(points) // 20))
    chunks = [points[i * len(points) // n : (i + 1) * len(points) // n] for i in range(n)]
    tight = [pick(c, key=lambda p: p[1]) for c in chunks]
    if len(tight) == 1:
        return 0.0, tight[0][1], 0.0
    mx = sum(x for x, _ in tight) / len(tight)
    my = sum(y for _, y in tight) / len(tight)
    m = sum((x - mx) * (y - my) for x, y in tight) / sum((x - mx) ** 2 for x, _ in tight)
    b = my - m * mx
    return m, b, max(abs(y - (m * x + b)) for x, y in tight)


def clock_model(requests, alone=None):
    """The offset (GPU clock minus host clock) as a function of host time, and how far off it
    may be (ns)."""
    lm, lb, lres = envelope([(c, e - c) for _, _, e, c in requests], max)
    if alone:
        # The shortest launch + completion latency with the GPU to itself.
        overhead = min((c - a) - (e - s) for a, s, e, c in alone)
        return (lambda t: lm * t + lb + overhead / 2), overhead / 2 + lres
    hm, hb, hres = envelope([(a, s - a) for a, s, _, _ in requests], min)
    xs = [a for a, _, _, _ in requests]
    gap = max((hm * x + hb) - (lm * x + lb) for x in (min(xs), max(xs)))
    return (lambda t: (lm + hm) / 2 * t + (lb + hb) / 2), gap / 2 + max(lres, hres)


def pct(v, q):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]


def per_request(words, requests, offset):
    """(hp_start_us, be_stop_us, BE busy at the launch) for each request launched while the
    best-effort run was traced."""
    stretches = busy_stretches(words)
    starts = [s for s, _ in stretches]
    first, last = (stretches[0][0], stretches[-1][1]) if stretches else (0, 0)
    out = []
    for a, s, _, _ in requests:
        launch = a + offset(a)
        if not first <= launch <= last:
            continue  # outside the traced part of the best-effort run
        i = bisect.bisect_right(starts, launch) - 1
        busy = i >= 0 and stretches[i][1] > launch
        out.append(((s - launch) / 1e3, (stretches[i][1] - launch) / 1e3 if busy else 0.0, busy))
    return out


def analyze(words, requests, alone=None):
    offset, unc = clock_model(requests, alone)
    rows = per_request(words, requests, offset)

    def stats(v):
        return {"p50": pct(v, 0.5), "p90": pct(v, 0.9), "p99": pct(v, 0.99), "max": max(v) if v else None}

    busy = [r for r in rows if r[2]]
    return {
        "requests": len(rows),
        "be_busy_at_launch": len(busy),
        "hp_start_us": stats([r[0] for r in rows]),
        "be_stop_us": stats([r[1] for r in rows]),
        "be_stop_us_when_busy": stats([r[1] for r in busy]),
        "switch_us": stats([r[0] - r[1] for r in busy]),
        "clock_uncertainty_us": unc / 1e3,
    }


def load_requests(path):
    with open(path) as f:
        return [
            tuple(int(x) for x in (r["launch_host_ns"], r["start_gpu_ns"], r["end_gpu_ns"], r["done_host_ns"]))
            for r in csv.DictReader(f)
        ]


def load(timeline, requests_csv, alone_csv=None):
    raw = open(timeline, "rb").read()
    words = list(struct.unpack(f"<{len(raw) // 8}Q", raw[: len(raw) // 8 * 8]))
    return words, load_requests(requests_csv), load_requests(alone_csv) if alone_csv else None


def record(start, end, gaps=()):
    w = [start, end, len(gaps), 0] + [0] * (2 * MAX_GAPS)
    for i, (s, e) in enumerate(gaps[:MAX_GAPS]):
        w[4 + 2 * i], w[5 + 2 * i] = s, e
    return w


def self_test():
    us = 1000
    # Two back-to-back kernels (a 2 µs launch gap, merged), switched out at 1500 µs for
    # 300 µs; then idle from 3000 µs to 4000 µs; one more kernel to 5000 µs.
    words = record(0, 1000 * us) + record(1002 * us, 3000 * us, [(1500 * us, 1800 * us)]) + record(4000 * us, 5000 * us)
    st = busy_stretches(words)
    assert st == [[0, 1500 * us], [1800 * us, 3000 * us], [4000 * us, 5000 * us]], st
    off = 7_000_000  # GPU clock ahead of the host's by 7 ms
    same = lambda t: off  # noqa: E731
    # Launch at 1300 µs (GPU time): BE stops at 1500, HP starts at 1520.
    # Launch at 3500 µs: BE idle, HP starts at 3505.
    reqs = [
        (1300 * us - off, 1520 * us, 1570 * us, 1575 * us - off),
        (3500 * us - off, 3505 * us, 3555 * us, 3560 * us - off),
    ]
    rows = per_request(words, reqs, same)
    assert rows == [(220.0, 200.0, True), (5.0, 0.0, False)], rows
    # A launch before the traced run is left out.
    assert per_request(words, reqs, lambda t: off - 2000 * us) == [(2005.0, 0.0, False)]
    # Without drift, one stretch: the midpoint of the bounds (start - launch >= 5 µs,
    # done - end >= 5 µs).
    f, unc = clock_model(reqs)
    assert (f(0), unc) == (off, 5 * us), (f(0), unc)
    r = analyze(words, reqs)
    assert r["requests"] == 2 and r["be_busy_at_launch"] == 1, r
    assert r["be_stop_us_when_busy"]["max"] == 200.0 and r["clock_uncertainty_us"] == 5.0, r
    assert r["switch_us"]["max"] == 20.0, r

    # The clocks drift: the GPU's runs 20 µs/s slower. 400 requests over 4 s, each started 150
    # µs late (beside BE) but seen done 6 µs after its end; HP alone: launch 4 µs, completion
    # 6 µs. The offset follows the drift, to within the alone run's 5 µs.
    drift = lambda t: off - t // 50_000  # noqa: E731  (t in ns: 20 µs per s)
    late = []
    for i in range(400):
        a = i * 10_000 * us
        s0 = a + drift(a) + 150 * us
        late.append((a, s0, s0 + 50 * us, a + 206 * us))
    alone = [(0, off + 4 * us, off + 54 * us, 60 * us)]
    f, unc = clock_model(late, alone)
    assert unc == 5 * us, unc
    for a, *_ in late:
        assert abs(f(a) - drift(a)) <= 1 * us + 1, (a, f(a) - drift(a))
    # Without the alone run the bounds stay loose: the midpoint is 72 µs late.
    f, unc = clock_model(late)
    assert abs(f(0) - drift(0) - 72 * us) < 1 * us and abs(unc - 78 * us) < 1 * us, (f(0) - drift(0), unc)
    print("preemption_timeline self-test: ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    elif len(sys.argv) in (3, 4):
        print(json.dumps(analyze(*load(*sys.argv[1:]))))
    else:
        sys.exit(__doc__)
