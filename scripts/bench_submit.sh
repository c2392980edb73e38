#!/usr/bin/env bash
# Runs the XQueue submit benchmark and writes its estimates to docs/benchmarks/submit/submit.json.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -p baton-core --bench submit -- --warm-up-time 2 --measurement-time 5
python3 - <<'PY'
import json, os, platform, subprocess, datetime
out = {"benchmark": "baton-core submit (criterion)",
       "command": "scripts/bench_submit.sh",
       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
       "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
       "machine": {"cpus": os.cpu_count(), "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"),
                   "kernel": platform.release(), "loadavg_1min": os.getloadavg()[0]},
       "unit": "ns per submit", "results": {}}
for name in ["no_worker", "worker_burst", "worker_idle_each_time"]:
    est = json.load(open(f"target/criterion/submit/{name}/new/estimates.json"))
    out["results"][name] = {k: round(est[k]["point_estimate"], 2) for k in ["median", "mean", "median_abs_dev", "std_dev"]}
    ci = est["median"]["confidence_interval"]
    out["results"][name]["median_ci95"] = [round(ci["lower_bound"], 2), round(ci["upper_bound"], 2)]
json.dump(out, open("docs/benchmarks/submit/submit.json", "w"), indent=2)
print(json.dumps(out["results"], indent=2))
PY
