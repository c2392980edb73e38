#!/usr/bin/env python3
"""Turns the suite's raw results into docs/BENCHMARKS.md and its plots.

  report.py docs/benchmarks/suite/suite.jsonl [--docs docs] [--command "how it was run"]

For each HP workload × BE job: a table per setup (HP p50/p99/p99.9 and × standalone, BE
throughput vs standalone and vs the share of time HP leaves idle), a latency CDF per setup
(PNG, DOCS/benchmarks/suite/PAIRING-hp-latency.png) and BE throughput bars (PNG,
PAIRING-be-throughput.png). Every number comes from the JSONL given, which the page names as
benchmarks/suite/ plus its file name (where the raw results are committed).
"""

import argparse
import collections
import json
import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Where the suite's raw results, notes and plots live, relative to the docs folder.
SUITE = "benchmarks/suite"


def key(args):
    return " ".join(args)


def pairing(hp_args, be_args):
    """A file-name stem for one HP workload × BE job, e.g. resnet50-b1-50rps-train."""
    hp = dict(zip(hp_args[::2], hp_args[1::2], strict=False))
    be = dict(zip(be_args[::2], be_args[1::2], strict=False))
    parts = [hp.get("--model", "hp")]
    if "--batch" in hp:
        parts.append(f"b{hp['--batch']}")
    if "--rate" in hp:
        parts.append(f"{float(hp['--rate']):g}rps")
    parts.append(be.get("--job", "be"))
    return re.sub(r"[^A-Za-z0-9.]+", "-", "-".join(parts))


MATRIX = "benchmarks/matrix"


def matrix_lead(docs):
    """The co-location matrix's headline, which leads the page: the matrix is the benchmark
    every change is judged by; the suite's pairings follow. The page's own matrix section is
    kept as it is (it is written with the headline run's page, and names that run); only a
    page without one gets a section made from the first table's table.md."""
    page = os.path.join(docs, "BENCHMARKS.md")
    if os.path.exists(page):
        text = open(page).read()
        start, end = text.find("## The co-location matrix"), text.find("## The earlier suite")
        if 0 <= start < end:
            return text[start:end].rstrip("\n").split("\n") + ["", "## The earlier suite", ""]
    path = os.path.join(docs, MATRIX, "table.md")
    if not os.path.exists(path):
        return []
    head = open(path).read().strip()
    return [
        "## The co-location matrix",
        "",
        f"Native against Baton's default flags, cell by cell; method, limits and raw files: "
        f"[`{MATRIX}/README.md`]({MATRIX}/README.md).",
        "",
        head,
        "",
        "## The earlier suite",
        "",
    ]


def rebase_links(text, from_dir, to_dir):
    """Rewrites the relative Markdown link targets of text, written for a page in from_dir, so
    they resolve from a page in to_dir."""

    def fix(m):
        target = m.group(2)
        if re.match(r"[a-z]+:|#|/", target):
            return m.group(0)
        path, _, anchor = target.partition("#")
        new = os.path.relpath(os.path.join(from_dir, path), to_dir)
        return f"{m.group(1)}({new}{'#' + anchor if anchor else ''})"

    return re.sub(r"(\]\s*)\(([^)\s]+)\)", fix, text)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("jsonl")
    p.add_argument("--docs", default="docs")
    p.add_argument("--command", default="python3 scripts/gpu/suite/suite.py --quick")
    p.add_argument(
        "--notes",
        default=None,
        help="a Markdown file appended as the page's reading of the numbers "
        "(default: <jsonl without extension>-notes.md if present)",
    )
    a = p.parse_args()
    runs = [json.loads(line) for line in open(a.jsonl) if line.strip()]
    # The JSONL may join several suite runs: each run is compared with the baselines measured
    # in that run (the latest "alone" records and unprotected configuration before it).
    alone_hp, alone_be, refs = {}, {}, {}
    groups = collections.defaultdict(list)
    for r in runs:
        hk, bk = key(r["hp_args"]), key(r["be_args"])
        if r["setup"] == "alone":
            if r.get("hp"):
                alone_hp[hk] = r["hp"]
            if r.get("be"):
                alone_be[bk] = r["be"]
            continue
        if r["config"] in ("native", "mps", "priority-stream") and r.get("be"):
            refs[(r["setup"], hk, bk)] = r["be"].get("rate") or 0
        r["_ha"], r["_ba"], r["_ref"] = alone_hp.get(hk), alone_be.get(bk), refs.get((r["setup"], hk, bk))
        groups[(hk, bk)].append(r)
    m = runs[0]["machine"] if runs else {}
    # Every commit the runs were made at, in the order they first appear.
    commits = list(dict.fromkeys(r["machine"].get("commit", "unknown") for r in runs))
    plots = os.path.join(a.docs, SUITE)
    os.makedirs(plots, exist_ok=True)
    md = [
        "# Benchmarks",
        "",
        f"Machine: {m.get('gpu')}, CUDA {m.get('cuda')}, {m.get('cpus')} CPUs, kernel "
        f"{m.get('kernel')}; commits {', '.join(commits)} (each row names its own).",
        "",
        f"Command: `{a.command}`; raw results: [`{SUITE}/{os.path.basename(a.jsonl)}`]"
        f"({SUITE}/{os.path.basename(a.jsonl)}) (one line per run, every latency included); "
        "this page is generated from it by `scripts/gpu/suite/report.py`.",
        "",
        "HP: a latency-critical service with Poisson arrivals; latency is arrival to result, "
        'queueing included. BE: best effort as fast as it goes. "× alone" compares with the same '
        'workload running alone in the same run. "of idle" is BE\'s throughput as a share of '
        "what it gets alone, divided by the share of time HP leaves the GPU idle when alone "
        "(the most it could get): 100 % means BE used every moment HP left.",
        "",
    ]
    md[2:2] = matrix_lead(a.docs)
    headline = []
    for (hk, bk), rs in sorted(groups.items()):
        ha, ba = rs[-1]["_ha"], rs[-1]["_ba"]
        md += [f"## HP `{hk}` beside BE `{bk}`", ""]
        if ha:
            md.append(
                f"Baselines of the last run (each row is compared with its own run's): HP alone: p50 {ha['p50_ms']:.2f} ms, p99 {ha['p99_ms']:.2f} ms, p99.9 "
                f"{ha['p999_ms']:.2f} ms, GPU busy {100 * ha['busy_fraction']:.0f} %. "
                + (f"BE alone: {ba['rate']:.1f} {ba['unit']}." if ba else "")
            )
            md.append("")
        md += [
            "| setup | configuration | HP p50 | HP p99 | HP p99.9 | p50 × alone | p99 × alone | BE | BE × setup's native | BE × alone | of idle | commit |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        fig, axes = plt.subplots(1, 3, figsize=(15, 4), sharey=True)
        setups = ["separate", "mps", "oneproc"]
        bars = []
        for r in rs:
            hp, be = r.get("hp") or {}, r.get("be") or {}
            commit = r["machine"].get("commit", "")
            if not hp:
                md.append(
                    f"| {r['setup']} | {r['config']} | failed: {r.get('error') or 'no result'} "
                    f"| | | | | | | | | {commit} |"
                )
                continue
            ha, ba, ref0 = r["_ha"], r["_ba"], r["_ref"]
            nan = float("nan")
            x50 = hp["p50_ms"] / ha["p50_ms"] if ha else nan
            x99 = hp["p99_ms"] / ha["p99_ms"] if ha else nan
            bx = be.get("rate", 0) / ba["rate"] if ba and be and ba.get("rate") else nan
            bn = be.get("rate", 0) / ref0 if be and ref0 else nan
            idle = 1 - ha["busy_fraction"] if ha else nan
            md.append(
                f"| {r['setup']} | {r['config']} | {hp['p50_ms']:.2f} ms | {hp['p99_ms']:.2f} ms | "
                f"{hp['p999_ms']:.2f} ms | ×{x50:.2f} | ×{x99:.2f} | {be.get('rate', 0):.1f} | "
                f"{100 * bn:.0f} % | {100 * bx:.0f} % | {100 * bx / idle:.0f} % | {commit} |"
            )
            headline.append((hk, bk, r["setup"], r["config"], x50, x99, bn))
            ax = axes[setups.index(r["setup"])] if r["setup"] in setups else axes[0]
            lat = sorted(hp.get("latencies_ms") or [])
            if lat:
                ax.plot(lat, [(i + 1) / len(lat) for i in range(len(lat))], label=r["config"])
            bars.append((f"{r['setup']}\n{r['config']}", 100 * bn))
        ha = rs[-1]["_ha"]
        for ax, name in zip(axes, setups, strict=True):
            if ha and ha.get("latencies_ms"):
                lat = sorted(ha["latencies_ms"])
                ax.plot(lat, [(i + 1) / len(lat) for i in range(len(lat))], "k--", label="HP alone")
            ax.set_title(name)
            ax.set_xscale("log")
            ax.set_xlabel("HP latency (ms)")
            ax.legend(fontsize=8)
        axes[0].set_ylabel("fraction of requests")
        cdf = f"{pairing(rs[0]['hp_args'], rs[0]['be_args'])}-hp-latency.png"
        fig.tight_layout()
        fig.savefig(os.path.join(plots, cdf), dpi=90)
        plt.close(fig)
        fig, ax = plt.subplots(figsize=(max(6, len(bars) * 1.1), 3.5))
        ax.bar([b[0] for b in bars], [b[1] for b in bars])
        ax.set_ylabel("BE throughput, % of the setup's native")
        ax.tick_params(axis="x", labelsize=7)
        bar = f"{pairing(rs[0]['hp_args'], rs[0]['be_args'])}-be-throughput.png"
        fig.tight_layout()
        fig.savefig(os.path.join(plots, bar), dpi=90)
        plt.close(fig)
        md += ["", f"![HP latency CDFs]({SUITE}/{cdf})", "", f"![BE throughput]({SUITE}/{bar})", ""]
    md += [
        "## Headline",
        "",
        "| HP | BE | setup | configuration | HP p50 × alone | HP p99 × alone | BE × setup's native |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    md += [f"| {h} | {b} | {s} | {c} | ×{x:.2f} | ×{y:.2f} | {100 * z:.0f} % |" for h, b, s, c, x, y, z in headline]
    notes = a.notes or os.path.splitext(a.jsonl)[0] + "-notes.md"
    if os.path.exists(notes):
        # The notes' links are written for where the notes live; the page is in the docs folder.
        md += [
            "",
            rebase_links(open(notes).read().rstrip(), os.path.dirname(os.path.abspath(notes)), os.path.abspath(a.docs)),
        ]
    open(os.path.join(a.docs, "BENCHMARKS.md"), "w").write("\n".join(md) + "\n")
    print(f"wrote {os.path.join(a.docs, 'BENCHMARKS.md')}: {len(runs)} runs, {len(groups)} pairings")


if __name__ == "__main__":
    main()
