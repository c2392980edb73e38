"""Summarizes interposer_check.sh's raw results into summary.json and a table.

  python3 scripts/gpu/summarize_interposer.py OUT_DIR
"""
import json
import statistics
import sys
from collections import defaultdict

out = sys.argv[1]


def load(name):
    try:
        return [json.loads(l) for l in open(f"{out}/{name}") if l.strip()]
    except FileNotFoundError:
        return []


summary = {"machine": json.load(open(f"{out}/machine.json")), "transparency": {}, "overhead": {}}
by_app = defaultdict(dict)
for r in load("transparency.jsonl"):
    by_app[r["app"]][r["mode"]] = r
print("transparency (checksum equal to native; Baton's kernel count vs CUPTI's)")
print(f"{'app':<12} {'native':<18} {'det.':<5} {'baton':<6} {'small':<6} {'kernels baton/small/cupti':<28}")
for app, runs in by_app.items():
    def cs(m):
        r = runs.get(m) or {}
        return (r.get("result") or {}).get("checksum"), r.get("rc")
    n, _ = cs("native")
    c, _ = cs("counted")
    b, brc = cs("baton")
    s, src = cs("baton-small")
    kb = (runs.get("baton", {}).get("baton_report") or {}).get("kernels")
    ks = (runs.get("baton-small", {}).get("baton_report") or {}).get("kernels")
    kc = (runs.get("counted", {}).get("cupti") or {}).get("kernels")
    entry = {"native": n, "native_repeat_equal": n == c, "baton_equal": b == n and brc == 0,
             "baton_small_window_equal": s == n and src == 0, "kernels_baton": kb,
             "kernels_baton_small_window": ks, "kernels_cupti": kc,
             "deferred_small_window": (runs.get("baton-small", {}).get("baton_report") or {}).get("deferred")}
    summary["transparency"][app] = entry
    print(f"{app:<12} {str(n):<18} {str(n == c):<5} {str(entry['baton_equal']):<6} {str(entry['baton_small_window_equal']):<6} {kb}/{ks}/{kc}")

ov = load("overhead.jsonl")


def med(xs):
    return statistics.median(xs) if xs else None


print("\noverhead (medians over repetitions; spread = min..max of per-repetition medians)")
for stream in ("legacy", "created"):
    for key in ("launch_ns", "roundtrip_ns"):
        per = {m: [med(r[key]) for r in ov if r.get("stream") == stream and r["mode"] == m and key in r] for m in ("native", "baton")}
        if per["native"] and per["baton"]:
            nat, bat = med(per["native"]), med(per["baton"])
            summary["overhead"][f"{stream}_{key}"] = {"native": nat, "baton": bat, "added_ns": bat - nat,
                                                      "native_reps": per["native"], "baton_reps": per["baton"]}
            print(f"{stream:<8} {key:<13} native {nat:8.1f} ns  baton {bat:8.1f} ns  added {bat - nat:+8.1f} ns"
                  f"  (native {min(per['native']):.0f}..{max(per['native']):.0f}, baton {min(per['baton']):.0f}..{max(per['baton']):.0f})")
for app in ("torch-bench-infer", "torch-bench-train"):
    per = {m: [r["median_s"] for r in ov if r.get("app") == app and r["mode"] == m] for m in ("native", "baton")}
    if per["native"] and per["baton"]:
        nat, bat = med(per["native"]), med(per["baton"])
        p99 = {m: med([statistics.quantiles(r["times_s"], n=100)[98] for r in ov if r.get("app") == app and r["mode"] == m]) for m in ("native", "baton")}
        summary["overhead"][app] = {"native_s": nat, "baton_s": bat, "slowdown": bat / nat - 1,
                                    "native_reps": per["native"], "baton_reps": per["baton"], "p99_s": p99}
        print(f"{app:<18} native {nat * 1e3:7.3f} ms  baton {bat * 1e3:7.3f} ms  slowdown {100 * (bat / nat - 1):+.2f}%"
              f"  p99 native {p99['native'] * 1e3:.3f} baton {p99['baton'] * 1e3:.3f} ms")
json.dump(summary, open(f"{out}/summary.json", "w"), indent=2)
