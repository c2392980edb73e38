#!/usr/bin/env python3
"""Turns the policy runs in target/policy-plots/*.json into docs/policies/*.png.

The JSON comes from the lab's virtual-time runs:

    cargo run --release -p baton-lab --example policy_plots [OUT_DIR]
    python3 scripts/plot_policies.py [OUT_DIR [PNG_DIR]]

Needs matplotlib (`pip install matplotlib`). Each PNG has two panels: the device work each
client completed over time (its slope is the client's share of the device), and each job's
latency at its release time, with the policy's reference lines (deadlines, SLO target).
"""

import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot(path, out_folder):
    with open(path) as f:
        doc = json.load(f)
    fig, (work, lat) = plt.subplots(1, 2, figsize=(12, 4.2))
    fig.suptitle(f"{doc['policy']}: {doc['title']}", fontsize=11)
    styles = ["-", "--", ":", "-."]
    for ri, run in enumerate(doc["runs"]):
        res = run["result"]
        prefix = f"{run['label']}: " if run["label"] else ""
        t = [x / 1000 for x in res["samples_ms"]]
        for ci, c in enumerate(res["clients"]):
            label = f"{prefix}{c['name']} ({100 * c['work_share']:.1f} %)"
            work.plot(t, [w / 1000 for w in c["work_ms"]], styles[ri % 4], color=f"C{ci}", label=label)
            jobs = c["jobs"]
            if jobs and len(jobs) < 4000:
                lat.scatter(
                    [j[0] / 1000 for j in jobs],
                    [j[1] for j in jobs],
                    s=4,
                    color=f"C{ci + 3 * ri}",
                    label=f"{prefix}{c['name']} (p99 {c['p99_ms']:.2f} ms)",
                )
    for i, line in enumerate(doc["lines"]):
        lat.axhline(
            line["ms"],
            color="k",
            linestyle=styles[(i + 1) % 4],
            linewidth=0.8,
            label=f"{line['label']} {line['ms']:g} ms",
        )
    work.set_xlabel("simulated time (s)")
    work.set_ylabel("device work completed (s)")
    work.legend(fontsize=7)
    lat.set_xlabel("job release (s)")
    lat.set_ylabel("job latency (ms)")
    lat.set_yscale("log")
    lat.legend(fontsize=7, markerscale=3)
    fig.tight_layout()
    out = os.path.join(out_folder, os.path.basename(path)[:-5] + ".png")
    fig.savefig(out, dpi=90)
    plt.close(fig)
    print(f"wrote {out}")


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "target/policy-plots"
    out_folder = sys.argv[2] if len(sys.argv) > 2 else "docs/policies"
    os.makedirs(out_folder, exist_ok=True)
    paths = sorted(glob.glob(os.path.join(folder, "*.json")))
    if not paths:
        sys.exit(f"no JSON in {folder}: run the policy_plots example first")
    for p in paths:
        plot(p, out_folder)


if __name__ == "__main__":
    main()
