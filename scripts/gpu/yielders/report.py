#!/usr/bin/env python3
"""What each case of `run.sh` got while all its jobs ran: the jobs of a pair start about a
second apart, so each job's own number mixes time alone with time together.

  report.py RESULTS.jsonl     one line per case: each job's TFLOP/s over the window every job
                              of the case was measuring (from the kernels' completion times),
                              and their sum
  report.py --self-test
"""

import json
import sys

FLOP = {"flood": 2 * 8192**3, "small": 2 * 1024**3}


def together(rows):
    """Each job's TFLOP/s while every job of the case was measuring, and the window (s)."""
    seen = [r["result"].get("seen") for r in rows]
    if any(not s for s in seen):
        return None, 0.0
    lo, hi = max(s[0] for s in seen), min(s[-1] for s in seen)
    if hi <= lo:
        return None, 0.0
    # Each job's own kind (a case may mix them).
    flop = [FLOP[r["result"].get("kind", r["kind"])] for r in rows]
    return [sum(lo < t <= hi for t in s) * f / (hi - lo) / 1e12 for s, f in zip(seen, flop, strict=True)], hi - lo


def report(lines):
    cases = {}
    for line in lines:
        r = json.loads(line)
        if r.get("result") is None:
            continue
        cases.setdefault((r["case"], r["kind"]), []).append(r)
    out = []
    for (case, kind), rows in cases.items():
        own = " + ".join(f"{r['result']['tflops']:.0f}" for r in rows)
        line = f"{case} ({kind}): {own} TFLOP/s"
        if len(rows) > 1:
            each, window = together(rows)
            if each:
                line += f"; while all ran ({window:.1f} s): {' + '.join(f'{x:.0f}' for x in each)} = {sum(each):.0f}"
        out.append(line)
    return out


def self_test():
    # Two jobs 1 s apart, each completing a flood kernel every 10 ms alone and every 20 ms
    # together: together they got half each.
    def job(i, start, stop):
        t, seen = start, []
        while t < stop:
            t += 0.02 if 1.0 <= t < 4.0 else 0.01
            seen.append(round(t, 5))
        return {"case": "pair", "kind": "flood", "job": i, "result": {"tflops": 1.0, "seen": seen}}

    rows = [job(1, 0.0, 4.0), job(2, 1.0, 5.0)]
    each, window = together(rows)
    rate = FLOP["flood"] / 0.02 / 1e12
    assert abs(window - 3.0) < 0.05 and all(abs(x - rate) < 0.02 * rate for x in each), (window, each)
    lines = report([json.dumps(r) for r in rows])
    assert len(lines) == 1 and "while all ran" in lines[0], lines
    # A case mixing kinds counts each job's kernels as its own kind's.
    mixed = [job(1, 0.0, 4.0), job(2, 1.0, 5.0)]
    for r, k in zip(mixed, ["flood", "small"], strict=True):
        r["kind"], r["result"]["kind"] = "flood+small", k
    each, _ = together(mixed)
    assert abs(each[1] / each[0] - FLOP["small"] / FLOP["flood"]) < 1e-9, each
    print("yielders report self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    with open(sys.argv[1]) as f:
        print("\n".join(report(f)))


if __name__ == "__main__":
    main()
