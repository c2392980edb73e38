#!/usr/bin/env python3
"""One table from one or more transparency runs (run.py's transparency.jsonl files).

  summarize.py RUN.jsonl [RUN.jsonl ...] [--out summary.md] [--gemm]
  summarize.py --self-test

Each file is judged against its own native runs (a workload whose native digests differ is
nondeterministic and not counted). A cell (workload, role, level) counts its identical runs over
all the runs it had, and says apart those that differ from native or failed (a bug) and those
that outlasted run.py's --timeout (a program that got too little of the GPU to finish: no
result either way), those whose other program did not run throughout (not contended: no
result for the role), and those through which no command went under Baton (unscheduled, its
report says no commands: the run tested nothing, a failure of the suite), so a cell re-run
after a timeout shows both. With --gemm, each contended run's GEMMs follow the table: how many
went through the interposer's hooks, were split, checked or ruled out, and each checked shape's
entry point, dimensions, types and verdict (its pieces, the whole call's and the pieces' device
time).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import ALL  # noqa: E402  (the workloads in the suite's order)

ROLES = ["alone", "higher", "suspended", "suspended-graph"]


def judge(records):
    """(workload, role, level, verdict) per contended record: ok, differs, failed, timeout,
    uncontended or unscheduled."""
    native = {}
    for r in records:
        if r["role"] == "native":
            native.setdefault(r["workload"], []).append(r["digest"] if r["rc"] == 0 else None)
    out = []
    for r in records:
        if r["role"] == "native":
            continue
        digests = native.get(r["workload"], [])
        if len(set(digests)) != 1 or None in digests:
            verdict = "nondeterministic"
        elif r["role"] != "alone" and r.get("other_ran_throughout") is False:
            verdict = "uncontended"
        elif r["rc"] == "timeout":
            verdict = "timeout"
        elif r["rc"] != 0:
            verdict = "failed"
        elif not (r.get("baton_report") or {}).get("commands"):
            verdict = "unscheduled"
        elif r["digest"] != digests[0]:
            verdict = "differs"
        else:
            verdict = "ok"
        out.append((r["workload"], r["role"], r["level"], verdict))
    return out


def table(judged):
    seen = {w for w, _, _, _ in judged}
    workloads = [w for w in ALL if w in seen] + sorted(seen - set(ALL))
    roles = [r for r in ROLES if any(j[1] == r for j in judged)]
    levels = sorted({lv for _, _, lv, _ in judged})
    head = "| workload | " + " | ".join(f"{ro} L{lv}" for ro in roles for lv in levels) + " |"
    lines = [head, "| --- | " + " | ".join("---" for _ in roles for _ in levels) + " |"]
    for w in workloads:
        cells = []
        for ro in roles:
            for lv in levels:
                v = [j[3] for j in judged if j[0] == w and j[1] == ro and j[2] == lv]
                ok = v.count("ok")
                cell = f"{ok}/{len(v)}" if v else "-"
                kinds = ("differs", "failed", "timeout", "uncontended", "unscheduled")
                extra = [f"{v.count(k)} {k}" for k in kinds if v.count(k)]
                cells.append(cell + (f" ({', '.join(extra)})" if extra else ""))
        lines.append(f"| {w} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def gemm_lines(records):
    """One line per contended run whose report has GEMMs, then one per checked shape."""
    out = []
    for r in records:
        g = (r.get("baton_report") or {}).get("gemm") or {}
        if r["role"] == "native" or not g.get("calls"):
            continue
        counts = ", ".join(
            f"{k} {g.get(k, 0)}" for k in ("calls", "split_calls", "pieces", "checks", "held_checks", "ruled_out")
        )
        out.append(f"- {r['workload']} {r['role']} L{r['level']}: {counts}")
        for sh in g.get("shapes", []):
            dims = f"{sh['m']}x{sh['n']}x{sh['k']}" + (f" x{sh['batch']}" if sh["batch"] != 1 else "")
            times = f"{sh['whole_us']:.0f} / {sh['split_us']:.0f} µs"
            out.append(f"  - {sh['entry']} {dims} types {sh['types']}: {sh['verdict']}, {sh['pieces']} pieces, {times}")
    return "\n".join(out) + ("\n" if out else "")


def self_test():
    def rec(w, role, level, rc, digest):
        report = {"commands": 12}
        return {"workload": w, "role": role, "level": level, "rc": rc, "digest": digest, "baton_report": report}

    a = [
        rec("x", "native", None, 0, "d"),
        rec("x", "suspended", 1, 0, "d"),
        rec("x", "suspended", 3, "timeout", None),
    ]
    b = [rec("x", "native", None, 0, "d"), rec("x", "suspended", 3, 0, "d"), rec("x", "higher", 1, 0, "e")]
    lone = dict(rec("x", "higher", 3, 0, "d"), other_ran_throughout=False)
    t = table(judge(a) + judge(b) + judge([b[0], lone]))
    assert "| x | 0/1 (1 differs) | 0/1 (1 uncontended) | 1/1 | 1/2 (1 timeout) |" in t, t
    n = [rec("y", "native", None, 0, "a"), rec("y", "native", None, 0, "b"), rec("y", "alone", 1, 0, "a")]
    assert judge(n) == [("y", "alone", 1, "nondeterministic")]
    # Identical, but nothing went through Baton: no result.
    idle = dict(rec("x", "alone", 2, 0, "d"), baton_report={"commands": 0})
    gone = dict(rec("x", "alone", 2, 0, "d"), baton_report=None)
    assert [j[3] for j in judge([b[0], idle, gone])] == ["unscheduled", "unscheduled"]
    assert "0/2 (2 unscheduled)" in table(judge([b[0], idle, gone]))
    shape = {"entry": "lt_matmul", "m": 8192, "n": 8192, "k": 8192, "batch": 1, "types": [14, 14, 14, 68, 0]}
    shape.update(verdict="split", pieces=13, whole_us=1400.4, split_us=1433.0)
    gemms = {"calls": 3, "split_calls": 2, "pieces": 26, "checks": 1, "ruled_out": 1, "shapes": [shape]}
    lines = gemm_lines([b[0], dict(rec("x", "suspended", 1, 0, "d"), baton_report={"commands": 5, "gemm": gemms})])
    assert "- x suspended L1: calls 3, split_calls 2, pieces 26, checks 1, held_checks 0, ruled_out 1" in lines, lines
    assert "lt_matmul 8192x8192x8192 types [14, 14, 14, 68, 0]: split, 13 pieces, 1400 / 1433 µs" in lines, lines
    print("summarize self-test ok")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="*")
    ap.add_argument("--out")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--gemm", action="store_true", help="list each contended run's GEMMs after the table")
    a = ap.parse_args()
    if a.self_test:
        self_test()
        return
    judged, records = [], []
    for path in a.runs:
        with open(path) as f:
            run = [json.loads(line) for line in f if line.strip()]
        judged += judge(run)
        records += run
    t = table(judged)
    if a.gemm:
        t += "\nGEMMs (the interposer's report):\n\n" + gemm_lines(records)
    if a.out:
        with open(a.out, "w") as f:
            f.write(t)
    sys.stdout.write(t)


if __name__ == "__main__":
    main()
