#!/usr/bin/env python3
"""A stand-in for workers.py without a GPU, for the matrix's self-test (selftest.py): the same
commands and answers, with made-up timings. A request takes 2 ms, 3 ms while any fake BE
floods (a flag file in $MATRIX_FAKE_DIR); a flood completes a unit of work every 5 ms."""
import json, os, sys, threading, time

FLAG = os.path.join(os.environ["MATRIX_FAKE_DIR"], "flooding")


def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def serve(n, warmup):
    lat, t_first, t_last = [], None, None
    for i in range(warmup + n):
        t0 = time.monotonic()
        # The latency reported is the made-up one, not the sleep's: a loaded test machine
        # oversleeps, and the self-test checks the controller, not the host's timer.
        made_up = 0.003 if os.path.exists(FLAG) else 0.002
        time.sleep(made_up)
        t1 = time.monotonic()
        if i >= warmup:
            t_first = t0 if t_first is None else t_first
            t_last = t1
            lat.append(made_up * 1e3)
        time.sleep(0.0005)
    return {"lat_ms": lat, "t_first": t_first, "t_last": t_last, "cpu_s": 0.0, "invol_switches": 0}


def main():
    stop, state = threading.Event(), {}
    answer({"ready": True, "pid": os.getpid(), "role": sys.argv[1], "baton": False})
    for line in sys.stdin:
        req = json.loads(line)
        cmd = req["cmd"]
        if cmd == "quit":
            answer({"ok": True})
            return
        if cmd == "hp":
            answer(serve(req["n"], req.get("warmup", 0)))
        elif cmd == "busy":
            answer({"busy": 0.1, "kernel_s": 0.01, "wall_s": 0.1})
        elif cmd == "flood":
            stop.clear()
            open(FLAG, "w").close()
            t0 = time.monotonic()
            state["log"] = log = [[t0, 0.0]]

            state["paused"] = False

            def run():
                while not stop.is_set():
                    time.sleep(0.005)
                    log.append([time.monotonic(), log[-1][1] + (0.0 if state["paused"] else 1.0)])
                log.append([time.monotonic(), log[-1][1] + 1.0])
            state["thread"] = threading.Thread(target=run)
            state["thread"].start()
            answer({"t_start": t0})
        elif cmd == "pause":
            # The flag file is what makes requests slow: gone while paused.
            if os.path.exists(FLAG):
                os.remove(FLAG)
            state["paused"] = True
            answer({"t_paused": time.monotonic()})
        elif cmd == "resume":
            state["paused"] = False
            open(FLAG, "w").close()
            answer({"t_resumed": time.monotonic()})
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
