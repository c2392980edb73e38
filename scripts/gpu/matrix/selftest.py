#!/usr/bin/env python3
"""The matrix controller end to end without a GPU: matrix.py drives fake_worker.py processes (a
shim stands in for `baton`) through setups S and P, two repeats and an unpinned one; the
analysis must find every cell with its samples, the references right, and the slowdown the
fakes make (x1.5 natively, and, the shim being no scheduler, under "baton" too). Then parts side
by side (side_by_side.py), what stops a run (refusals) and the CPU slicing. Run by
scripts/test.sh."""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import matrix  # noqa: E402


def script(path, text):
    """Writes an executable shell script at PATH; returns PATH."""
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


def shim(tmp):
    """`baton run [flags] -- CMD...` runs CMD; `baton daemon ...` waits to be stopped;
    `baton trace ... --out FILE` writes an empty trace; `baton list` answers with a header, a
    queue that launched and, without `--used`, one that never did."""
    return script(
        os.path.join(tmp, "baton"),
        '#!/bin/sh\ncase "$1" in\n  run) while [ "$1" != "--" ]; do shift; done; shift; BATON_SHIM=1 exec "$@";;\n'
        "  daemon) exec sleep 600;;\n"
        '  trace) while [ "$1" != "--out" ]; do shift; done; echo "[]" > "$2";;\n'
        "  list) echo 'PID COMMAND QUEUE DEVICE STATE RUN LVL WINDOW INFLIGHT LAUNCHED HINTS'\n"
        "        echo '7 python3 q1 GPU-0 ready running 1 kept 2 12 priority=10'\n"
        "        [ \"$2\" = --used ] || echo '7 python3 q2 GPU-0 idle running 1 off 0 0 priority=11';;\n"
        "  *) exit 0;;\nesac\n",
    )


def smi_shim(tmp):
    """`nvidia-smi --query-gpu=... --format=csv --loop-ms=N`: a header, then a sample every N ms
    until stopped; without --loop-ms, a GPU's name and driver. Returns the directory to put
    first on PATH."""
    d = os.path.join(tmp, "bin")
    os.makedirs(d, exist_ok=True)
    script(
        os.path.join(d, "nvidia-smi"),
        '#!/bin/sh\ncase "$*" in *--loop-ms=*) ;; *) echo "NVIDIA Fake, 580.0"; exit 0;; esac\n'
        "echo 'index, timestamp, clocks.current.sm [MHz], power.draw [W]'\n"
        "while true; do echo '0, 2026/11/29 05:44:50.934, 1980 MHz, 121.5 W, 40, 0x0000000000000000'; "
        "sleep 0.1; done\n",
    )
    return d


def run(args, env, what):
    r = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"{what} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def main():
    tmp = tempfile.mkdtemp(prefix="matrix-selftest.")
    env = dict(
        os.environ,
        BATON_BIN=shim(tmp),
        MATRIX_WORKER=os.path.join(HERE, "fake_worker.py"),
        MATRIX_FAKE_DIR=tmp,
        MATRIX_JOB_ALONE_S="0.6",
        MATRIX_SPLIT_DEVICE="cuda:0",
    )
    out = os.path.join(tmp, "out")
    listed = dict(env, MATRIX_LIST="0.5", MATRIX_SMI="100", PATH=smi_shim(tmp) + os.pathsep + os.environ["PATH"])
    run(
        [
            os.path.join(HERE, "matrix.py"),
            "--out",
            out,
            "--setups",
            "S,P",
            "--repeats",
            "2",
            "--samples",
            "40",
            "--unpinned",
            "--budget-s",
            "300",
        ],
        listed,
        "matrix.py",
    )
    s = json.load(open(os.path.join(out, "summary.json")))
    cells = s["cells"]
    pinned = [c for c in cells if c["pinned"]]
    # S: 4 services x 2 jobs x 2 modes; P: x 3 modes; unpinned: S only, one repeat.
    assert len(pinned) == 4 * 2 * 2 + 4 * 2 * 3, len(pinned)
    assert len(cells) - len(pinned) == 4 * 2 * 2, len(cells)
    for c in pinned:
        assert c["repeats"] == 2 and c["samples"] == 80, c
        assert 1.4 < c["hp_p50_ratio"] < 1.6 or c["setup"] == "P", c
        assert c["be_share_alone"] and 0.5 < c["be_share_alone"] < 1.5, c
        assert c["reference"] == ("native-split" if c["setup"] == "P" and c["mode"] != "native-split" else "alone"), c
        assert c["protect"] in ("holds", "fails", "undecided"), c
    raw = json.load(open(os.path.join(out, "raw-SP-GT.json")))
    assert raw["services"]["S"]["Rg60"]["rate"] > raw["services"]["S"]["Rg25"]["rate"] > 0, raw["services"]
    assert {r["pinned"] for r in raw["records"]} == {True, False}
    assert all(w["builds"] == ["Be,Dg,Rg", "G,T"] for w in raw["workers"].values()), raw["workers"]
    assert os.path.exists(os.path.join(out, "table.md"))
    # BATON_REPORT: each Baton worker's exit report, summarized; natively there is none.
    reports = raw["reports"]
    assert {k.split("/")[0] for k in reports} == {"S", "P"}, sorted(reports)
    assert all("/native" not in k for k in reports), sorted(reports)
    job = [q for q in reports["S/baton-be"] if q.get("inflight_at_suspend")]
    assert job and job[0]["inflight_at_suspend"]["suspensions"] == 4, reports["S/baton-be"]
    # MATRIX_LIST: the Baton modes' listings, the queues that never launched left out.
    listing = open(os.path.join(out, "list-S.txt")).read()
    assert "s baton\n" in listing and "LAUNCHED" in listing, listing[:300]
    assert " q1 " in listing and " q2 " not in listing, listing[:300]
    assert "s native\n" not in listing, "a native mode has no daemon to list"
    # MATRIX_SMI: the GPU sampled while the part ran, with the clock offset first.
    smi = open(os.path.join(out, "smi-S.csv")).read().splitlines()
    assert smi[0].startswith("# CLOCK_MONOTONIC - wall clock: ") and "1980 MHz" in smi[2], smi[:3]
    print(f"matrix controller self-test: ok ({len(cells)} cells, {len(raw['records'])} records)")
    side_by_side(tmp, env)
    refusals(tmp, env)
    slicing()


def refusals(tmp, env):
    """What stops a run rather than letting it report success: P's native-split with no second
    GPU is refused before any worker starts, a setup whose workers fail makes matrix.py exit
    non-zero, and side_by_side gives each part its own run of GPUs."""
    import side_by_side as sbs

    assert [sbs.part_devices(k, 2) for k in range(2)] == ["0,1", "2,3"]
    assert [sbs.part_devices(k, 1) for k in range(3)] == ["0", "1", "2"]
    base = [os.path.join(HERE, "matrix.py"), "--samples", "20", "--repeats", "1", "--budget-s", "60"]
    one_gpu = dict(env, CUDA_VISIBLE_DEVICES="0", MATRIX_SPLIT_DEVICE="cuda:1")
    r = subprocess.run(
        [sys.executable, *base, "--out", os.path.join(tmp, "refused"), "--setups", "P"],
        env=one_gpu,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "native-split" in r.stderr and "sees 1 GPU" in r.stderr, (r.returncode, r.stderr)
    assert not os.path.exists(os.path.join(tmp, "refused", "raw-P-GT.json")), "a refused run started workers"
    failing = dict(env, MATRIX_WORKER="/bin/false")
    r = subprocess.run(
        [
            sys.executable,
            *base,
            "--out",
            os.path.join(tmp, "aborted"),
            "--setups",
            "S",
            "--services",
            "Rg25",
            "--jobs",
            "G",
        ],
        env=failing,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1 and "setup(s) aborted: S" in r.stderr, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    print("matrix refusal self-test: ok")


def side_by_side(tmp, env):
    """Two parts side by side without GPUs: each writes its own raw file with its CPU slice, and
    the merged analysis holds both parts' cells. The first part also runs a native mode with an
    environment of its own (native-below): its workers run without `baton run`, the job's with
    the variable."""
    out = os.path.join(tmp, "sbs")
    common = "--repeats 1 --samples 20 --budget-s 300"
    parts = [
        f"--setups S --jobs G --services Rg25,Dg --modes native,native-below,baton {common}",
        f"--setups P --jobs T --services Be {common}",
    ]
    traces = os.path.join(tmp, "traces")
    run(
        [
            os.path.join(HERE, "side_by_side.py"),
            "--out",
            out,
            "--gpus",
            "0",
            "--pack",
            os.path.join(tmp, "sbs.tgz"),
            "--",
            *parts,
        ],
        dict(env, MATRIX_TRACE=traces, MATRIX_TRACE_S="0.1"),
        "side_by_side.py",
    )
    for k, name in enumerate(["raw-S-G.json", "raw-P-T.json"]):
        raw = json.load(open(os.path.join(out, name)))
        assert raw["cpus"]["slice"] == matrix.machine_slice(spec=f"{k}/2"), raw["cpus"]
    workers = json.load(open(os.path.join(out, "raw-S-G.json")))["workers"]
    seen = {name: (w["baton"], w["mps_client_priority"]) for name, w in workers.items()}
    assert seen["S/native-below/hp"] == (False, None) and seen["S/native-below/be"] == (False, "1"), seen
    assert seen["S/baton/be"] == (True, None) and seen["S/native/be"] == (False, None), seen
    cells = json.load(open(os.path.join(out, "summary.json")))["cells"]
    assert {(c["setup"], c["be"], c["hp"]) for c in cells} == {("S", "G", "Rg25"), ("S", "G", "Dg"), ("P", "T", "Be")}
    assert {c["mode"] for c in cells if c["setup"] == "S"} == {"native", "native-below", "baton"}
    # A trace of each Baton mode's cells (the modes with a daemon), none of the native ones.
    assert sorted(os.listdir(traces)) == ["trace-P-T-baton-r0.json", "trace-S-G-baton-r0.json"], os.listdir(traces)
    # And when each traced cell's holds landed, as a record of its own (the fake workers launch
    # nothing, so their traces hold no request).
    holds = [
        (r["setup"], r["mode"], r["be"], r["requests"])
        for name in ["raw-S-G.json", "raw-P-T.json"]
        for r in json.load(open(os.path.join(out, name)))["records"]
        if r["kind"] == "hold"
    ]
    assert sorted(holds) == [("P", "baton", "T", 0), ("S", "baton", "G", 0)], holds
    assert os.path.getsize(os.path.join(tmp, "sbs.tgz")) > 0
    print(f"matrix side-by-side self-test: ok ({len(cells)} cells from 2 parts)")


def slicing():
    """CPU slices are whole physical cores: parts side by side never share a core, nor do the
    service and the job; without SMT the slices are the CPUs in order."""
    assert matrix.parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    flat = {c: [c] for c in range(16)}
    assert matrix.machine_slice(16, "1/2", flat) == list(range(8, 16))
    hp, be, rest = matrix.cpu_sets(list(range(16)), flat)
    assert (hp, be, rest) == ([8, 9, 10, 11], [12, 13, 14, 15], list(range(8))), (hp, be, rest)
    # Two threads a core, CPU n and n + 16 on one core (a common VM layout).
    smt = {c: sorted({c % 16, c % 16 + 16}) for c in range(32)}
    a, b = matrix.machine_slice(32, "0/2", smt), matrix.machine_slice(32, "1/2", smt)
    assert a == [*range(0, 8), *range(16, 24)] and b == [*range(8, 16), *range(24, 32)], (a, b)
    hp, be, rest = matrix.cpu_sets(a, smt)
    assert set(hp) == {4, 5, 20, 21} and set(be) == {6, 7, 22, 23}, (hp, be)
    assert set(rest) == set(a) - set(hp) - set(be) and rest == sorted(rest), rest
    assert matrix.cpu_sets([0, 1, 2]) == (None, None, [0, 1, 2])
    # Fewer cores than parts: the whole machine, unpinned.
    assert matrix.machine_slice(2, "1/4", {0: [0], 1: [1]}) == [0, 1]
    print("matrix CPU slicing self-test: ok")


if __name__ == "__main__":
    main()
