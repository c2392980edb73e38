#!/usr/bin/env python3
"""Summarizes scripts/gpu/capi/run.sh's results.jsonl: per example and mode, the medians (with
min and max over repeats) of the service's p50 and p99 beside training as a multiple of the
same run's service alone, the training's throughput inside the service's window as a share of
the same run's training alone, and the absolute latencies. A run whose training did not cover
the service's window is left out and counted.

    summarize.py RESULTS.jsonl OUTDIR      -> OUTDIR/summary.json, OUTDIR/table.md
    summarize.py --self-test
"""

import json
import statistics
import sys

MODES = ["native", "baton-off", "baton-on"]
FIGURES = [
    ("hp_p50_x", "HP p50 × alone", lambda r: r["summary"]["hp_p50_x"]),
    ("hp_p99_x", "HP p99 × alone", lambda r: r["summary"]["hp_p99_x"]),
    ("be_share", "BE in HP's window, share of alone", lambda r: r["summary"]["be_share"]),
    ("alone_p50_ms", "HP alone p50 ms", lambda r: r["hp_alone"]["p50_ms"]),
    ("both_p99_ms", "HP beside BE p99 ms", lambda r: r["both"]["p99_ms"]),
]


def summarize(records):
    out = {}
    for r in records:
        cell = out.setdefault(r["example"], {}).setdefault(
            r["mode"], {"runs": 0, "failed": 0, "invalid": 0, "values": {}, "checks": []}
        )
        cell["runs"] += 1
        if r.get("failed"):
            cell["failed"] += 1
            continue
        if not r["both"].get("be_covered", False):
            cell["invalid"] += 1
            continue
        for key, _, f in FIGURES:
            cell["values"].setdefault(key, []).append(f(r))
        if "check" in r:
            cell["checks"].append(r["check"])
    for modes in out.values():
        for cell in modes.values():
            cell["median"] = {k: statistics.median(v) for k, v in cell["values"].items()}
            cell["min"] = {k: min(v) for k, v in cell["values"].items()}
            cell["max"] = {k: max(v) for k, v in cell["values"].items()}
    return out


def table(summary):
    lines = []
    for ex, modes in summary.items():
        lines.append(f"### {ex}\n")
        lines.append("| mode | runs (failed, invalid) | " + " | ".join(t for _, t, _ in FIGURES) + " |")
        lines.append("| --- | --- |" + " --- |" * len(FIGURES))
        for mode in MODES:
            c = modes.get(mode)
            if c is None:
                continue
            cells = []
            for key, _, _ in FIGURES:
                if key not in c["median"]:
                    cells.append("–")
                    continue
                pct = key == "be_share"
                fmt = (lambda v: f"{100 * v:.0f} %") if pct else (lambda v: f"{v:.2f}")
                cells.append(f"{fmt(c['median'][key])} ({fmt(c['min'][key])}–{fmt(c['max'][key])})")
            lines.append(f"| {mode} | {c['runs']} ({c['failed']}, {c['invalid']}) | " + " | ".join(cells) + " |")
        checks = [c for m in modes.values() for c in m["checks"]]
        if checks:
            lines.append("")
            lines.append("Checks: " + "; ".join(json.dumps(c) for c in checks))
        lines.append("")
    return "\n".join(lines)


def self_test():
    def rec(mode, p50x, share, covered=True, failed=False):
        if failed:
            return {"example": "e", "mode": mode, "failed": True}
        return {
            "example": "e",
            "mode": mode,
            "summary": {"hp_p50_x": p50x, "hp_p99_x": 2 * p50x, "be_share": share},
            "hp_alone": {"p50_ms": 3.0},
            "both": {"p99_ms": 9.0, "be_covered": covered},
        }

    s = summarize(
        [
            rec("native", 1.5, 0.8),
            rec("native", 1.7, 0.9),
            rec("native", 9, 0.1, covered=False),
            rec("baton-on", 1.0, 0.5),
            rec("baton-on", 0, 0, failed=True),
        ]
    )
    n = s["e"]["native"]
    assert n["runs"] == 3 and n["invalid"] == 1 and n["median"]["hp_p50_x"] == 1.6, n
    assert s["e"]["baton-on"]["failed"] == 1 and s["e"]["baton-on"]["median"]["be_share"] == 0.5
    t = table(s)
    assert "| native | 3 (0, 1) | 1.60 (1.50–1.70)" in t, t
    assert "50 % (50 %–50 %)" in t, t
    print("summarize.py self-test: ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        sys.exit(0)
    records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    s = summarize(records)
    json.dump(s, open(f"{sys.argv[2]}/summary.json", "w"), indent=1)
    open(f"{sys.argv[2]}/table.md", "w").write(table(s))
    print(table(s))
