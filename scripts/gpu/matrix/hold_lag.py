#!/usr/bin/env python3
"""When a hold lands: from daemon traces (`baton trace`, the matrix's MATRIX_TRACE), how long
after a service's queue becomes ready the job's queue is suspended, and how long after the
service goes idle the job runs again, as the daemon recorded them.

  hold_lag.py TRACE.json [TRACE.json ...] [--service PID]
                              one JSON line per trace: the service's and the job's pids, the
                              requests seen (the service's ready marks), the hold's lag
                              (p50/p90/p99/max, µs; 0 when the job was already suspended),
                              requests during which the job was never suspended, the share of
                              the service's ready time the job ran, and the hand-back (from the
                              service's idle mark to the job's next running span)
  hold_lag.py --self-test

The service is every queue that is never suspended and has ready marks (or the queues of
--service); the job is the queue suspended most often among the others. Times are the daemon's:
a ready mark is when the daemon heard of the work, a span starts when the daemon recorded the
change, so the lag is the daemon's decision and its record, not the host's launch.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyze import pct  # noqa: E402


def summary(values):
    """How many, and the nearest-rank p50, p90, p99 and the largest."""
    return {
        "n": len(values),
        "p50": pct(values, 0.50),
        "p90": pct(values, 0.90),
        "p99": pct(values, 0.99),
        "max": max(values) if values else None,
    }


def tracks(events):
    """Per (pid, tid): its spans [(state, start, end)] sorted, and its marks [(ts, ready)]."""
    spans, marks = {}, {}
    for e in events:
        key = (e.get("pid"), e.get("tid"))
        if e.get("ph") == "X" and e.get("cat") == "span":
            start = float(e["ts"])
            spans.setdefault(key, []).append((e["name"], start, start + float(e.get("dur", 0))))
        elif e.get("ph") == "i" and e.get("cat") == "state":
            marks.setdefault(key, []).append((float(e["ts"]), e["name"] == "ready"))
    for v in spans.values():
        v.sort(key=lambda s: s[1])
    for v in marks.values():
        # By time only: marks of one instant keep the daemon's order (ready, then idle).
        v.sort(key=lambda m: m[0])
    return spans, marks


def ready_intervals(marks, end):
    """The [ready, idle) intervals of one queue's marks (the last one open until END)."""
    out, since = [], None
    for ts, ready in marks:
        if ready and since is None:
            since = ts
        elif not ready and since is not None:
            out.append((since, ts))
            since = None
    if since is not None:
        out.append((since, end))
    return out


def state_at(spans, t):
    """The state of the span covering T (None if none does)."""
    for state, start, stop in spans:
        if start <= t < stop:
            return state
        if start > t:
            break
    return None


def analyse(trace, service=None):
    """The summary of one trace (Chrome's object form, or its bare array of events)."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    spans, marks = tracks(events)
    end = max((s[2] for v in spans.values() for s in v), default=0.0)
    end = max([end] + [m[0] for v in marks.values() for m in v])
    suspended = {k: sum(1 for s in v if s[0] == "suspended") for k, v in spans.items()}
    if service is not None:
        hp = [k for k in marks if k[0] == service]
    else:
        hp = [k for k in marks if suspended.get(k, 0) == 0 and any(r for _, r in marks[k])]
    hp_pids = sorted({k[0] for k in hp})
    others = [k for k in spans if k[0] not in hp_pids and suspended.get(k, 0) > 0]
    if not hp or not others:
        return {"service": hp_pids, "job": None, "requests": 0, "note": "no service or no suspended job"}
    job = max(others, key=lambda k: suspended[k])
    js = spans[job]
    lags, unheld, hand_back = [], 0, []
    ready_us = ran_us = 0.0
    # Work that came and went within one instant had nothing to hold.
    requests = sorted(iv for k in hp for iv in ready_intervals(marks[k], end) if iv[1] > iv[0])
    for start, stop in requests:
        ready_us += stop - start
        for state, a, b in js:
            if state == "running" and b > start and a < stop:
                ran_us += min(b, stop) - max(a, start)
        if state_at(js, start) == "suspended":
            lags.append(0.0)
        else:
            nxt = next((a for state, a, _ in js if state == "suspended" and a >= start), None)
            if nxt is None or nxt >= stop:
                unheld += 1
            else:
                lags.append(nxt - start)
        if stop < end:
            back = next((a for state, a, _ in js if state == "running" and a >= stop), None)
            if back is not None:
                hand_back.append(back - stop)
    return {
        "service": hp_pids,
        "job": [job[0], job[1]],
        "requests": len(requests),
        "hold_lag_us": summary(lags),
        "requests_never_held": unheld,
        "job_ran_share_of_ready": round(ran_us / ready_us, 4) if ready_us else None,
        "hand_back_us": summary(hand_back),
    }


def self_test():
    def span(pid, state, ts, dur):
        return {"ph": "X", "cat": "span", "name": state, "pid": pid, "tid": 1, "ts": ts, "dur": dur}

    def mark(pid, ready, ts):
        return {"ph": "i", "cat": "state", "name": "ready" if ready else "idle", "pid": pid, "tid": 1, "ts": ts}

    # The service (pid 1) is ready over [100, 300), [500, 700) and [900, 950); the job (pid 2)
    # runs, is suspended 40 µs into the first request until 350, is already suspended when the
    # second starts (from 450 to 760), and is never suspended during the third.
    events = [
        span(1, "running", 0, 1000),
        mark(1, True, 100),
        mark(1, False, 300),
        mark(1, True, 500),
        mark(1, False, 700),
        mark(1, True, 900),
        mark(1, False, 950),
        mark(1, True, 980),
        mark(1, False, 980),
        span(2, "running", 0, 140),
        span(2, "suspended", 140, 210),
        span(2, "running", 350, 100),
        span(2, "suspended", 450, 310),
        span(2, "running", 760, 240),
    ]
    r = analyse({"traceEvents": events})
    assert r["service"] == [1] and r["job"] == [2, 1], r
    assert r["requests"] == 3, r
    assert r["hold_lag_us"]["n"] == 2 and r["hold_lag_us"]["max"] == 40 and r["hold_lag_us"]["p50"] == 0, r
    assert r["requests_never_held"] == 1, r
    # Ran 40 µs of the first request's 200, none of the second's, all 50 of the third's.
    assert r["job_ran_share_of_ready"] == round(90 / 450, 4), r
    # Back 50 µs after the first request, 60 after the second; the third's idle is followed by
    # no running span start.
    assert r["hand_back_us"]["n"] == 2 and r["hand_back_us"]["max"] == 60, r
    # Named explicitly, the same answer; a trace without a suspended job says so.
    assert analyse({"traceEvents": events}, service=1) == r
    assert analyse(events) == r
    assert analyse({"traceEvents": events[:7]})["job"] is None
    print("hold_lag.py self-test: ok")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("traces", nargs="*")
    p.add_argument("--service", type=int, default=None, help="the service's pid (default: found)")
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args(argv)
    if a.self_test:
        self_test()
        return 0
    if not a.traces:
        p.error("name at least one trace (or --self-test)")
    for path in a.traces:
        with open(path) as f:
            r = analyse(json.load(f), a.service)
        print(json.dumps({"trace": path, **r}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
