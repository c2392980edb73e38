"""Summarizes scripts/gpu/interposer/run.sh's raw results into summary.json and a table.

python3 scripts/gpu/interposer/summarize.py OUT_DIR
"""

import json
import statistics
import sys
from collections import defaultdict

out = sys.argv[1]


def load(name):
    try:
        return [json.loads(line) for line in open(f"{out}/{name}") if line.strip()]
    except FileNotFoundError:
        return []


summary = {"machine": json.load(open(f"{out}/machine.json")), "transparency": {}, "overhead": {}}
by_app = defaultdict(dict)
for r in load("transparency.jsonl"):
    by_app[r["app"]][r["mode"]] = r
print("transparency (checksum equal to native; Baton's kernel count vs CUPTI's)")
print(f"{'app':<12} {'native':<18} {'det.':<5} {'baton':<6} {'small':<6} {'kernels baton/small/cupti':<28}")
for app, runs in by_app.items():

    def cs(m, runs=runs):
        r = runs.get(m) or {}
        return (r.get("result") or {}).get("checksum"), r.get("rc")

    n, _ = cs("native")
    c, _ = cs("counted")
    b, brc = cs("baton")
    s, src = cs("baton-small")
    kb = (runs.get("baton", {}).get("baton_report") or {}).get("kernels")
    ks = (runs.get("baton-small", {}).get("baton_report") or {}).get("kernels")
    kc = (runs.get("counted", {}).get("cupti") or {}).get("kernels")
    entry = {
        "native": n,
        "native_repeat_equal": n == c,
        "baton_equal": b == n and brc == 0,
        "baton_small_window_equal": s == n and src == 0,
        "kernels_baton": kb,
        "kernels_baton_small_window": ks,
        "kernels_cupti": kc,
        "deferred_small_window": (runs.get("baton-small", {}).get("baton_report") or {}).get("deferred"),
    }
    summary["transparency"][app] = entry
    print(
        f"{app:<12} {str(n):<18} {str(n == c):<5} {str(entry['baton_equal']):<6} {str(entry['baton_small_window_equal']):<6} {kb}/{ks}/{kc}"
    )

ov = load("overhead.jsonl")


def med(xs):
    return statistics.median(xs) if xs else None


print("\noverhead (medians over repetitions; spread = min..max of per-repetition medians)")
MODES = [m for m in ("passthrough", "baton", "local", "keep") if any(r["mode"] == m for r in ov)]
for stream in ("legacy", "created"):
    for key in ("launch_ns", "roundtrip_ns"):
        per = {
            m: [med(r[key]) for r in ov if r.get("stream") == stream and r["mode"] == m and key in r]
            for m in ["native"] + MODES
        }
        if not per["native"]:
            continue
        nat = med(per["native"])
        row = {"native": nat, "native_reps": per["native"]}
        line = f"{stream:<8} {key:<13} native {nat:8.1f} ns ({min(per['native']):.0f}..{max(per['native']):.0f})"
        for m in MODES:
            if per[m]:
                v = med(per[m])
                row[m] = v
                row[f"{m}_added_ns"] = v - nat
                row[f"{m}_reps"] = per[m]
                line += f" | {m} {v - nat:+7.1f} ns ({min(per[m]) - nat:+.0f}..{max(per[m]) - nat:+.0f})"
        summary["overhead"][f"{stream}_{key}"] = row
        print(line)
for app in ("torch-bench-infer", "torch-bench-train"):
    per = {m: [r["median_s"] for r in ov if r.get("app") == app and r["mode"] == m] for m in ["native"] + MODES}
    if not per["native"]:
        continue
    p99 = {
        m: med([statistics.quantiles(r["times_s"], n=100)[98] for r in ov if r.get("app") == app and r["mode"] == m])
        for m in per
        if per[m]
    }
    nat = med(per["native"])
    row = {"native_s": nat, "native_reps": per["native"], "p99_s": p99}
    line = f"{app:<18} native {nat * 1e3:7.3f} ms (p99 {p99['native'] * 1e3:.3f})"
    for m in MODES:
        if per[m]:
            v = med(per[m])
            row[f"{m}_s"] = v
            row[f"{m}_slowdown"] = v / nat - 1
            row[f"{m}_reps"] = per[m]
            line += f" | {m} {100 * (v / nat - 1):+.2f}% (p99 {p99[m] * 1e3:.3f})"
    summary["overhead"][app] = row
    print(line)
diag = {}
for m in MODES:
    reps = [r["report"] for r in ov if r["mode"] == m and r.get("report") and "stream" in r]
    if reps:
        diag[m] = {k: med([x.get(k, 0) for x in reps]) for k in ("sync_points", "deferred", "commands", "streams")}
if diag:
    summary["overhead"]["launch_loop_reports"] = diag
    print("interposer reports, launch loop (medians per process):", json.dumps(diag))
ab = load("ab.jsonl")
if ab:
    print(
        "\nin-process A/B, added ns per launch (median over processes of each one's paired median; IQR within a process)"
    )
    summary["ab"] = {}
    groups = defaultdict(list)
    for r in ab:
        # Older records name no interposer build and no eviction.
        groups[(r.get("evict_kb", 0), r["stream"], r["mode"], r.get("lib", "current"))].append(r)
    for (kb, stream, m, lib), rs in sorted(groups.items()):
        lib = "-" if m == "native" else lib
        v = med([r["added_ns_median"] for r in rs])
        key = f"{stream}_{m}" + ("" if lib in ("-", "current") else f"_{lib}") + (f"_evict{kb}" if kb else "")
        summary["ab"][key] = {
            "added_ns": v,
            "per_process": [r["added_ns_median"] for r in rs],
            "direct_ns": med([r["direct_ns"] for r in rs]),
        }
        procs = ", ".join("%+.0f" % r["added_ns_median"] for r in rs)
        iqr = "%+.0f..%+.0f" % (rs[0]["added_ns_p25"], rs[0]["added_ns_p75"])
        direct = med([r["direct_ns"] for r in rs])
        print(
            f"evict {kb:>5} KiB {stream:<8} {m:<7} {lib:<8} {v:+7.1f} ns  (processes: {procs}; IQR {iqr}; direct {direct:.0f} ns)"
        )
calls = load("calls.jsonl")
if calls:
    summary["calls"] = {c["app"]: c.get("calls", {}) for c in calls}
    for c in calls:
        print(
            c["app"],
            "calls:",
            " ".join(f"{k}={v}" for k, v in sorted(c.get("calls", {}).items(), key=lambda kv: -kv[1])),
        )
json.dump(summary, open(f"{out}/summary.json", "w"), indent=2)
