#!/usr/bin/env python3
"""A stand-in for services.py without a GPU, for the matrix's self-test (selftest.py): the same
commands and answers, with made-up timings. A request takes 2 ms (Dg tokens 1 ms), half as long
again while any fake job floods (a flag file in $MATRIX_FAKE_DIR); a flood completes a unit of
work every 5 ms. Serving sleeps 0.2 ms a request, so windows are real and short."""

import json
import os
import sys
import threading
import time

FLAG = os.path.join(os.environ["MATRIX_FAKE_DIR"], "flooding")


def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def serve(hp, n):
    slow = 1.5 if os.path.exists(FLAG) else 1.0
    base = 1.0 if hp == "Dg" else 2.0
    t_first = time.monotonic()
    time.sleep(0.0002 * n)
    lat = [base * slow * (1 + (i % 10) / 100) for i in range(n)]
    return {
        "lat_ms": lat,
        "censored": 0,
        "requests": n,
        "t_first": t_first,
        "t_last": time.monotonic(),
        "cpu_s": 0.0,
        "invol_switches": 0,
    }


def write_report():
    """At exit, as the interposer does with BATON_REPORT ending in a slash: one file per
    process, its queues and what their suspensions found in flight."""
    where = os.environ.get("BATON_REPORT", "")
    if "BATON_SHIM" not in os.environ or not where.endswith("/"):
        return
    os.makedirs(where, exist_ok=True)
    suspended = {"suspensions": 4, "unmeasured": 1, "budgeted": 3, "mean_commands": 1.5}
    suspended.update({"max_commands": 2, "mean_us": 300.0, "max_us": 450.0})
    queues = [
        {"stream": "Regular 0x1", "priority": 10, "commands": 100},
        {"stream": "Regular 0x2", "priority": 0, "commands": 900, "inflight_at_suspend": suspended},
    ]
    with open(os.path.join(where, f"baton-report-{os.getpid()}.json"), "w") as f:
        json.dump({"schema": "baton.interposer-report/1", "queues": queues}, f)


def main():
    stop, state = threading.Event(), {}
    answer(
        {
            "ready": True,
            "pid": os.getpid(),
            "role": sys.argv[1],
            "baton": "BATON_SHIM" in os.environ,
            "builds": [os.environ.get("MATRIX_SERVICES"), os.environ.get("MATRIX_JOBS")],
            "gpu_mib": 0,
            "mps_client_priority": os.environ.get("CUDA_MPS_CLIENT_PRIORITY"),
        }
    )
    for line in sys.stdin:
        req = json.loads(line)
        cmd = req["cmd"]
        if cmd == "quit":
            write_report()
            answer({"ok": True})
            return
        if cmd == "time":
            answer({"ms": [2.0] * req["n"]})
        elif cmd == "serve":
            answer(serve(req["hp"], req["n"]))
        elif cmd == "busy":
            answer({"busy": 0.2, "kernel_s": 0.02, "wall_s": 0.1})
        elif cmd == "flood":
            stop.clear()
            open(FLAG, "w").close()
            t0 = time.monotonic()
            state["log"] = log = [[t0, 0.0]]

            def run(log=log):
                while not stop.is_set():
                    time.sleep(0.005)
                    log.append([time.monotonic(), log[-1][1] + 1.0])

            state["thread"] = threading.Thread(target=run)
            state["thread"].start()
            answer({"t_start": t0})
        elif cmd == "stop":
            stop.set()
            state["thread"].join()
            if os.path.exists(FLAG):
                os.remove(FLAG)
            answer({"log": state["log"], "unit": "units"})
        else:
            answer({"error": f"unknown command {cmd!r}"})


if __name__ == "__main__":
    main()
