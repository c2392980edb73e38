#!/usr/bin/env python3
"""Parts of the co-location matrix side by side on one machine of several GPUs, one part a GPU:

  side_by_side.py --out DIR [--pack FILE.tgz] -- 'MATRIX ARGS' 'MATRIX ARGS' ...

Part K runs `matrix.py --out DIR/part-K MATRIX ARGS` with CUDA_VISIBLE_DEVICES=K (with
--gpus-per-part G, GPUs K*G to K*G+G-1: P's native-split needs two) and MATRIX_SLICE=K/N: its
own GPU, its own N-th of the physical cores with all their hardware threads
(matrix.py pins HP and BE inside it, on cores of their own, and watches only those CPUs for
stalls), its own daemon socket and MPS control daemon (both under
its own temporary directory). Every ratio the matrix reports is taken inside one part (each
repeat measures its own alone baselines), so parts never compare across GPUs. The parts' raw
files are copied into DIR (their names must differ: give the parts different --setups, --jobs
or --first-rep) and analyze.py reads them all. --pack writes DIR as one compressed archive too
(the device tool brings back few files)."""

import argparse
import glob
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import analyze  # noqa: E402


# How often the parts' progress (each console's last line) is printed while they run.
PROGRESS_S = 60


def last_line(path):
    try:
        with open(path) as f:
            lines = [ln.rstrip() for ln in f if ln.strip()]
        return lines[-1] if lines else "(no output yet)"
    except OSError:
        return "(no console)"


def gpu_count():
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True, check=True
        ).stdout
        return len(out.split())
    except (OSError, subprocess.CalledProcessError):
        return 0


def part_devices(k, per):
    """CUDA_VISIBLE_DEVICES of part `k` when each part sees `per` GPUs: the k-th run of them."""
    return ",".join(str(k * per + i) for i in range(per))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--pack", default=None, help="also write DIR as this .tgz")
    p.add_argument(
        "--gpus",
        type=int,
        default=None,
        help="GPUs to use (default: as many as nvidia-smi lists; without one, parts share none)",
    )
    p.add_argument(
        "--gpus-per-part",
        type=int,
        default=1,
        help="GPUs each part sees (2 for P, whose native-split runs the job on a second GPU)",
    )
    p.add_argument("parts", nargs="+", help="each part's matrix.py arguments, one quoted string a part")
    a = p.parse_args(argv)
    gpus = a.gpus if a.gpus is not None else gpu_count()
    per = a.gpus_per_part
    if per < 1:
        p.error("--gpus-per-part must be at least 1")
    if gpus and len(a.parts) * per > gpus:
        p.error(f"{len(a.parts)} parts of {per} GPU(s) each but {gpus} GPU(s)")
    os.makedirs(a.out, exist_ok=True)
    procs, t0 = [], time.monotonic()
    for k, part in enumerate(a.parts):
        out = os.path.join(a.out, f"part-{k}")
        env = dict(os.environ, MATRIX_SLICE=f"{k}/{len(a.parts)}")
        if gpus:
            env["CUDA_VISIBLE_DEVICES"] = part_devices(k, per)
        cmd = [sys.executable, os.path.join(HERE, "matrix.py"), "--out", out, *shlex.split(part)]
        console = open(os.path.join(a.out, f"console-{k}.txt"), "w")
        console.write(
            f"$ CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES', '')} "
            f"MATRIX_SLICE={env['MATRIX_SLICE']} {shlex.join(cmd)}\n"
        )
        console.flush()
        procs.append((k, subprocess.Popen(cmd, env=env, stdout=console, stderr=subprocess.STDOUT), console))
        print(f"part {k}: {part}", flush=True)
    failed, running, last_note = [], dict((k, (p, c)) for k, p, c in procs), time.monotonic()
    while running:
        for k, (proc, console) in list(running.items()):
            rc = proc.poll()
            if rc is None:
                continue
            console.close()
            del running[k]
            print(f"part {k}: exit {rc} after {time.monotonic() - t0:.0f} s", flush=True)
            if rc != 0:
                failed.append(k)
        if running and time.monotonic() - last_note >= PROGRESS_S:
            last_note = time.monotonic()
            for k in sorted(running):
                print(f"part {k}: {last_line(os.path.join(a.out, f'console-{k}.txt'))}", flush=True)
        time.sleep(0.5)
    seen = {}
    for k, _, _ in procs:
        for raw in sorted(glob.glob(os.path.join(a.out, f"part-{k}", "raw-*.json"))):
            name = os.path.basename(raw)
            if name in seen:
                sys.exit(
                    f"parts {seen[name]} and {k} both wrote {name}: give them different --setups, --jobs or --first-rep"
                )
            seen[name] = k
            shutil.copy(raw, os.path.join(a.out, name))
    if seen:
        analyze.main([a.out])
    if a.pack:
        with tarfile.open(a.pack, "w:gz") as t:
            t.add(a.out, arcname=os.path.basename(os.path.normpath(a.out)))
    if failed or not seen:
        sys.exit(f"parts that failed: {failed}; raw files: {len(seen)}")


if __name__ == "__main__":
    main()
