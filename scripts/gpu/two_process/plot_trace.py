#!/usr/bin/env python3
"""Draws a `baton trace` (Chrome-trace JSON) as a PNG: one row per queue, running spans green,
suspended spans red, ready marks as ticks; decision latencies below.

  plot_trace.py TRACE.json OUT.png [--window-ms 200]
"""

import json
import sys
import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

p = argparse.ArgumentParser()
p.add_argument("trace")
p.add_argument("out")
p.add_argument("--window-ms", type=float, default=200.0, help="show the first N ms with activity")
a = p.parse_args()
ev = json.load(open(a.trace))["traceEvents"]
names, procs = {}, {}
for e in ev:
    if e.get("ph") == "M" and e["name"] == "thread_name":
        names[(e["pid"], e["tid"])] = e["args"]["name"]
    if e.get("ph") == "M" and e["name"] == "process_name":
        procs[e["pid"]] = e["args"]["name"]
spans = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "span"]
marks = [e for e in ev if e.get("ph") == "i" and e.get("cat") == "state" and e["name"] == "ready"]
decisions = [e for e in ev if e.get("cat") == "decision"]
if not spans:
    sys.exit("no spans in the trace")
susp = [s for s in spans if s["name"] == "suspended"]
t0 = min(s["ts"] for s in (susp or spans))
t1 = t0 + a.window_ms * 1e3
rows = sorted({(s["pid"], s["tid"]) for s in spans})
fig, (ax, ax2) = plt.subplots(
    2, 1, figsize=(12, 1.2 + 0.5 * len(rows)), sharex=True, gridspec_kw={"height_ratios": [max(2, len(rows)), 1.5]}
)
for i, r in enumerate(rows):
    for s in spans:
        if (s["pid"], s["tid"]) != r or s["ts"] > t1 or s["ts"] + s["dur"] < t0:
            continue
        a0, a1 = max(s["ts"], t0), min(s["ts"] + s["dur"], t1)
        ax.barh(
            i,
            (a1 - a0) / 1e3,
            left=(a0 - t0) / 1e3,
            height=0.6,
            color="tab:green" if s["name"] == "running" else "tab:red",
        )
    xs = [(m["ts"] - t0) / 1e3 for m in marks if (m["pid"], m["tid"]) == r and t0 <= m["ts"] <= t1]
    ax.plot(xs, [i + 0.4] * len(xs), "k|", markersize=6)
ax.set_yticks(range(len(rows)))
ax.set_yticklabels([f"{procs.get(r[0], r[0])} {names.get(r, r[1])}"[:48] for r in rows], fontsize=7)
ax.set_title("Baton: running (green) / suspended (red) per queue; | = became ready")
dx = [((d["ts"] - t0) / 1e3, d["dur"]) for d in decisions if t0 <= d["ts"] <= t1]
ax2.plot([x for x, _ in dx], [y for _, y in dx], ".", markersize=3)
ax2.set_ylabel("decision µs")
ax2.set_xlabel("ms")
fig.tight_layout()
fig.savefig(a.out, dpi=120)
print(f"wrote {a.out}: {len(rows)} queues, {len(spans)} spans, {len(decisions)} decisions")
