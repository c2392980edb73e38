#!/usr/bin/env python3
"""The matrix controller end to end without a GPU: matrix.py drives fake_worker.py processes
(a shim stands in for `baton run`) through setups S and P, two repeats, the phased method for R
and B; then the analysis must find every cell valid, the baselines paired, and the slowdown
the fake workers make (×1.5 natively). Run by scripts/test.sh."""
import json, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    tmp = tempfile.mkdtemp(prefix="matrix-selftest.")
    shim = os.path.join(tmp, "baton")
    with open(shim, "w") as f:
        # `baton run [flags] -- CMD...` runs CMD; `baton daemon --stop` does nothing.
        f.write('#!/bin/sh\n[ "$1" = run ] || exit 0\nwhile [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n')
    os.chmod(shim, 0o755)
    out = os.path.join(tmp, "out")
    env = dict(os.environ, BATON_BIN=shim, MATRIX_WORKER=os.path.join(HERE, "fake_worker.py"),
               MATRIX_FAKE_DIR=tmp, MATRIX_BE_ALONE_S="0.3")
    r = subprocess.run([sys.executable, os.path.join(HERE, "matrix.py"), "--out", out, "--setups", "S,P",
                        "--repeats", "2", "--phases", "2", "--n-r", "20", "--n-b", "20", "--n-d", "4",
                        "--budget-s", "300"], env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"matrix.py failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    s = json.load(open(os.path.join(out, "summary.json")))
    cells = s["cells"]
    assert len(cells) == 3 * 2 * 3 + 3 * 2 * 2, len(cells)
    bad = [c for c in cells if not c["valid"] or c["repeats"] != 2]
    assert not bad, bad[0]
    raw = json.load(open(os.path.join(out, "raw-SP-GT.json")))
    kinds = {(r["kind"], r["hp"]) for r in raw["records"] if r.get("hp")}
    assert ("alone_paired", "R") in kinds and ("alone_paired", "B") in kinds, kinds
    assert ("alone_paired", "D") not in kinds
    for c in cells:
        if c["mode"] == "native":
            # The fakes make a request 1.5× slower while BE floods.
            assert 1.2 < c["hp_p50_ratio_median"] < 2.0, c
        assert c["be_share_alone_median"] and 0.5 < c["be_share_alone_median"] < 1.5, c
    assert os.path.exists(os.path.join(out, "pareto-S.svg")) and os.path.exists(os.path.join(out, "table.md"))
    assert raw["machine"]["threads_per_core"] >= 1 and raw["machine"]["cores"] >= 1, raw["machine"]
    print(f"matrix controller self-test: ok ({len(cells)} cells, {len(raw['records'])} records)")
    side_by_side(tmp, env)
    slicing()
    one_sided(tmp, env)


def one_sided(tmp, env):
    """baton-hp and baton-be put one role under `baton run` and leave the other native, served
    by the native worker; both run as cells of their own."""
    sys.path.insert(0, HERE)
    import matrix

    class A:
        policy, be_sms = None, "112"
    m = matrix.Matrix.__new__(matrix.Matrix)
    m.a, m.baton = A(), "/b"
    assert m.wrapper("S", "baton-hp", "hp") == ["/b", "run", "--priority", "10", "--"]
    assert m.wrapper("S", "baton-hp", "be") == []
    assert m.wrapper("M", "baton-be", "be") == ["/b", "run", "--priority", "0", "--"]
    assert m.wrapper("M", "baton-be", "hp") == []
    out = os.path.join(tmp, "one-sided")
    r = subprocess.run([sys.executable, os.path.join(HERE, "matrix.py"), "--out", out, "--setups", "S",
                        "--hps", "D", "--bes", "T", "--repeats", "1", "--n-d", "4",
                        "--modes", "native,baton-hp,baton-be", "--budget-s", "120"],
                       env=env, capture_output=True, text=True, timeout=200)
    if r.returncode != 0:
        sys.exit(f"matrix.py (one-sided modes) failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    cells = {c["mode"]: c for c in json.load(open(os.path.join(out, "summary.json")))["cells"]}
    assert set(cells) == {"native", "baton-hp", "baton-be"}, set(cells)
    assert all(c["valid"] for c in cells.values()), cells
    print("matrix one-sided modes self-test: ok")


def slicing():
    """CPU slices are whole physical cores: parts side by side never share a core, nor do HP
    and BE; without SMT the slices are the CPUs in order, as before."""
    sys.path.insert(0, HERE)
    import matrix
    assert matrix.parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    flat = {c: [c] for c in range(16)}
    assert matrix.machine_slice(16, "1/2", flat) == list(range(8, 16))
    assert matrix.cpu_sets(list(range(16)), flat) == ("8,9,10,11", "12,13,14,15", "8,9,10,11,12,13,14,15")
    # Two threads a core, CPU n and n + 16 on one core (a common VM layout).
    smt = {c: sorted({c % 16, c % 16 + 16}) for c in range(32)}
    a, b = matrix.machine_slice(32, "0/2", smt), matrix.machine_slice(32, "1/2", smt)
    assert a == [*range(0, 8), *range(16, 24)] and b == [*range(8, 16), *range(24, 32)], (a, b)
    hp, be, both = matrix.cpu_sets(a, smt)
    hp, be = {int(c) for c in hp.split(",")}, {int(c) for c in be.split(",")}
    assert hp == {4, 5, 20, 21} and be == {6, 7, 22, 23}, (hp, be)
    assert not {smt[c][0] for c in hp} & {smt[c][0] for c in be}
    # The daemon and the script run on the rest of the slice, never on a role's core.
    rest = matrix.rest_cpus(a, both)
    assert set(rest) == set(a) - hp - be and rest == sorted(rest), rest
    assert matrix.rest_cpus([0, 1, 2], None) == [0, 1, 2]
    # Fewer cores than parts: the whole machine, unpinned.
    assert matrix.machine_slice(2, "1/4", {0: [0], 1: [1]}) == [0, 1]
    print("matrix CPU slicing self-test: ok")


def side_by_side(tmp, env):
    """Three parts side by side (side_by_side.py), without GPUs: each writes its own raw file
    with its CPU slice, and the merged analysis holds every part's cells, valid where two parts
    split one setup's services between them."""
    out = os.path.join(tmp, "sbs")
    common = "--repeats 1 --n-r 20 --n-d 4 --budget-s 300 --modes native,baton"
    parts = [f"--setups S --bes G --hps R {common}", f"--setups S --bes G --hps D --first-rep 5 {common}",
             f"--setups P --bes T --hps R,D {common}"]
    r = subprocess.run([sys.executable, os.path.join(HERE, "side_by_side.py"), "--out", out, "--gpus", "0",
                        "--pack", os.path.join(tmp, "sbs.tgz"), "--", *parts],
                       env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"side_by_side.py failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    for k, name in enumerate(["raw-S-G.json", "raw-S-G-r5.json", "raw-P-T.json"]):
        raw = json.load(open(os.path.join(out, name)))
        assert raw["slice"]["spec"] == f"{k}/3", raw["slice"]
    cells = json.load(open(os.path.join(out, "summary.json")))["cells"]
    assert {(c["setup"], c["be"], c["hp"]) for c in cells} == \
        {("S", "G", "R"), ("S", "G", "D"), ("P", "T", "R"), ("P", "T", "D")}, cells
    assert all(c["valid"] and c["repeats_asked"] == 1 for c in cells), cells
    assert os.path.getsize(os.path.join(tmp, "sbs.tgz")) > 0
    print(f"matrix side-by-side self-test: ok ({len(cells)} cells from 3 parts)")


if __name__ == "__main__":
    main()
