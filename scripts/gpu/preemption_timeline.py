#!/usr/bin/env python3
"""Preemption latency from the GPU's own clock (scripts/gpu/apps/preempt_probe.cu's traces).

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
Beside a best-effort process every start is delayed, so only the lower bound is tight: it is
the offset minus the shortest completion latency (kernel end -> host sees it). That latency
is at most the shortest launch-plus-completion time of HP running alone, which is
offset-free ((done - launch) - (end - start)); with HP_ALONE_REQUESTS.csv the offset is the
lower bound plus half of that, give or take the other half (`clock_uncertainty_us`).
Without it, the midpoint of the two bounds of this run is used.
`switch_us` (HP's start minus BE's stop, both on the GPU's clock) needs no offset at all.
Stdlib only, so that CI can run the self-test.
"""
import bisect, csv, json, struct, sys

WORDS = 16          # per kernel, as preempt_probe.cu's TIMELINE_WORDS
MAX_GAPS = 6
MERGE_NS = 10_000   # best-effort stretches closer than this count as one (launch gaps)


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


def clock_offset(requests, alone=None):
    """GPU clock minus host clock, and how far off it may be (both ns)."""
    hi = min(s - a for a, s, _, _ in requests)
    lo = max(e - c for _, _, e, c in requests)
    if alone:
        # The shortest launch + completion latency with the GPU to itself.
        overhead = min((c - a) - (e - s) for a, s, e, c in alone)
        return lo + overhead / 2, overhead / 2
    return (hi + lo) / 2, (hi - lo) / 2


def pct(v, q):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]


def per_request(words, requests, off):
    """(hp_start_us, be_stop_us, BE busy at the launch) for each request launched while the
    best-effort run was traced."""
    stretches = busy_stretches(words)
    starts = [s for s, _ in stretches]
    first, last = (stretches[0][0], stretches[-1][1]) if stretches else (0, 0)
    out = []
    for a, s, _, _ in requests:
        launch = a + off
        if not first <= launch <= last:
            continue  # outside the traced part of the best-effort run
        i = bisect.bisect_right(starts, launch) - 1
        busy = i >= 0 and stretches[i][1] > launch
        out.append(((s - launch) / 1e3, (stretches[i][1] - launch) / 1e3 if busy else 0.0, busy))
    return out


def analyze(words, requests, alone=None):
    off, unc = clock_offset(requests, alone)
    rows = per_request(words, requests, off)

    def stats(v):
        return {"p50": pct(v, .5), "p90": pct(v, .9), "p99": pct(v, .99), "max": max(v) if v else None}
    busy = [r for r in rows if r[2]]
    return {"requests": len(rows), "be_busy_at_launch": len(busy),
            "hp_start_us": stats([r[0] for r in rows]),
            "be_stop_us": stats([r[1] for r in rows]),
            "be_stop_us_when_busy": stats([r[1] for r in busy]),
            "switch_us": stats([r[0] - r[1] for r in busy]),
            "clock_uncertainty_us": unc / 1e3}


def load_requests(path):
    with open(path) as f:
        return [tuple(int(x) for x in (r["launch_host_ns"], r["start_gpu_ns"], r["end_gpu_ns"],
                                       r["done_host_ns"])) for r in csv.DictReader(f)]


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
    words = (record(0, 1000 * us) + record(1002 * us, 3000 * us, [(1500 * us, 1800 * us)])
             + record(4000 * us, 5000 * us))
    st = busy_stretches(words)
    assert st == [[0, 1500 * us], [1800 * us, 3000 * us], [4000 * us, 5000 * us]], st
    off = 7_000_000  # GPU clock ahead of the host's by 7 ms
    # Launch at 1300 µs (GPU time): BE stops at 1500, HP starts at 1520.
    # Launch at 3500 µs: BE idle, HP starts at 3505.
    reqs = [(1300 * us - off, 1520 * us, 1570 * us, 1575 * us - off),
            (3500 * us - off, 3505 * us, 3555 * us, 3560 * us - off)]
    # Bounds: hi = min(s - a) = off + 5 µs, lo = max(e - c) = off - 5 µs.
    assert clock_offset(reqs) == (off, 5 * us), clock_offset(reqs)
    rows = per_request(words, reqs, off)
    assert rows == [(220.0, 200.0, True), (5.0, 0.0, False)], rows
    # A launch before the traced run is left out.
    assert per_request(words, reqs, off - 2000 * us) == [(2005.0, 0.0, False)]
    r = analyze(words, reqs)
    assert r["requests"] == 2 and r["be_busy_at_launch"] == 1, r
    assert r["be_stop_us_when_busy"]["max"] == 200.0 and r["clock_uncertainty_us"] == 5.0, r
    assert r["switch_us"]["max"] == 20.0, r
    # Beside BE every start is late: the bounds are loose, but an alone run (launch 4 µs,
    # completion 6 µs, kernel 50 µs) pins the offset to the lower bound plus 5 µs.
    late = [(1300 * us - off, 1520 * us, 1570 * us, 1576 * us - off),
            (3400 * us - off, 3550 * us, 3600 * us, 3606 * us - off)]
    alone = [(0, off + 4 * us, off + 54 * us, 60 * us)]
    assert clock_offset(late) == (off + 72 * us, 78 * us)
    assert clock_offset(late, alone) == (off - 1 * us, 5 * us)
    assert analyze(words, late, alone)["clock_uncertainty_us"] == 5.0
    print("preemption_timeline self-test: ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    elif len(sys.argv) in (3, 4):
        print(json.dumps(analyze(*load(*sys.argv[1:]))))
    else:
        sys.exit(__doc__)
