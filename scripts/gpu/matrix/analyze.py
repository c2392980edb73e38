#!/usr/bin/env python3
"""The co-location matrix's analysis: from the raw files matrix.py writes to the cells, the
rules, the table and the pictures. Standard library only, so that CI runs its self-test and
anyone can regenerate the documents without a GPU.

  analyze.py DIR          reads DIR/raw-*.json; writes DIR/summary.json, DIR/table.md and
                          DIR/pareto-<setup>.svg; prints the table
  analyze.py --compare DIR DIR...
                          reads each DIR/summary.json (written as above) and prints, per cell,
                          each run's verdicts under Baton's default flags: which cells held all
                          three rules in every run, in some, in none, and which failed beyond
                          the noise in every run
  analyze.py --self-test

A cell is (hp, be, setup, mode). Per repeat: HP p50 and p99 over HP alone (native, same setup,
same repeat); BE's progress inside HP's window (first to last timed request) over BE alone
(same setup and repeat) and over native co-located (same repeat). Medians over the valid
repeats, with min and max. A repeat is invalid when a worker failed, HP answered fewer requests
than asked, or BE's log does not cover HP's window; a cell is valid only if every repeat it
asked for is. Percentiles are nearest-rank, as everywhere in Baton.

The rules (each Baton cell; native cells are judged too, as the reference):
  protect          HP p99 <= x1.10 of alone, and not above native co-located's
  no harm          where native co-located HP p99 <= x1.10 of alone: BE >= 90 % of native's
  work-conserving  otherwise: BE >= 90 % of BE alone x (1 - HP's GPU-busy share)
"""
import bisect, glob, json, math, os, random, re, statistics, sys

HPS, BES, SETUPS = "RBD", "GT", "SMP"
# baton-hold: BE held back whenever HP has work: in docs/benchmarks/matrix/yield/ (S), whose
# "baton" yielded by time slice; in M `--hold`, since the default there gives way by SMs.
# baton-unmeasured: BE's command time never told (BATON_COMMAND_TIME=off), held as before.
# baton-w256: BE with a window of 256 commands, a sync point every 32.
# baton-block: P with BATON_MAX_BUFFERED=1 (a thread launching into a held stream waits).
# baton-low: M with BE an MPS client of below-normal priority (CUDA_MPS_CLIENT_PRIORITY=1).
# native-split: P's control, natively, with the job's work on a second GPU (the two threads share
# the process, not the GPU).
# baton-hp, baton-be: S and M with only the service (baton-hp) or only the job (baton-be) under
# `baton run`, the other native: which side of Baton a difference from native comes from.
MODES = ["native", "baton", "baton-l3", "baton-yield", "baton-w2", "baton-hold", "baton-unmeasured",
         "baton-w256", "baton-sms", "baton-reserve", "baton-block", "baton-low", "native-split",
         "baton-hp", "baton-be"]
# Each mode's colour in the pictures (the self-test checks that every mode has one).
MODE_COLORS = {"native": "#777777", "baton": "#1f77b4", "baton-l3": "#d62728", "baton-yield": "#ff7f0e", "baton-w2": "#17becf", "baton-hold": "#8c564b", "baton-unmeasured": "#bcbd22", "baton-w256": "#e377c2", "baton-sms": "#2ca02c", "baton-reserve": "#9467bd", "baton-block": "#7f7f7f", "baton-low": "#aec7e8", "native-split": "#c49c94", "baton-hp": "#98df8a", "baton-be": "#ff9896"}
HP_NAMES = {"R": "ResNet-50 b8", "B": "BERT-base b1", "D": "GPT-2-medium decode"}
BE_NAMES = {"G": "bf16 GEMM flood", "T": "ResNet-50 training"}
SETUP_NAMES = {"S": "separate processes, time-sliced", "M": "separate processes, MPS",
               "P": "one process, HP on a high-priority stream"}
PROTECT, NO_HARM, SHARE_OF_IDLE = 1.10, 0.90, 0.90
# The shortest gap of a stallwatch thread that was not real-time taken as a stall of its CPU.
NON_FIFO_STALL_S = 0.012
# Sync points per thousand commands above which a service kept its launch window (one that
# nothing outranks keeps none once the daemon has answered).
KEPT_WINDOW = 1.0


def pct(v, q):
    """Nearest-rank percentile (the value at rank ceil(q * n)); None for no samples."""
    if not v:
        return None
    s = sorted(v)
    return s[min(len(s), max(1, math.ceil(q * len(s)))) - 1]


def rotate(items, k):
    k %= len(items)
    return items[k:] + items[:k]


def progress_at(log, t):
    """Units done by time T, from a log of (time, cumulative units) at completions, linear
    between two completions; None outside the log."""
    if not log or t < log[0][0] or t > log[-1][0]:
        return None
    lo, hi = 0, len(log) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if log[mid][0] <= t:
            lo = mid
        else:
            hi = mid
    (t0, u0), (t1, u1) = log[lo], log[hi]
    if t1 <= t0:
        return u1 if t >= t1 else u0
    return u0 + (u1 - u0) * (t - t0) / (t1 - t0)


def window_progress(log, t_first, t_last):
    """BE's progress inside [t_first, t_last]: units, rate, and whether the log covers it."""
    a, b = progress_at(log, t_first), progress_at(log, t_last)
    if a is None or b is None or t_last <= t_first:
        return {"units": None, "rate": None, "covered": False}
    return {"units": b - a, "rate": (b - a) / (t_last - t_first), "covered": True}


def steady_rate(log, t_from, t_to):
    """Rate between the first completion at or after T_FROM and the last at or before T_TO."""
    pts = [(t, u) for t, u in log if t_from <= t <= t_to]
    if len(pts) < 2 or pts[-1][0] <= pts[0][0]:
        return 0.0
    return (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])


def thin(log, dt):
    """Every completion at least DT after the last kept one, and the last."""
    out = []
    for t, u in log:
        if not out or t - out[-1][0] >= dt:
            out.append([t, u])
    if log and out[-1] != list(log[-1]):
        out.append(list(log[-1]))
    return out


def med(v):
    return statistics.median(v) if v else None


def spread(v):
    """(max - min) / median: the repeat-to-repeat spread."""
    m = med(v)
    return (max(v) - min(v)) / m if v and m else None


def stall_free(rec, gaps):
    """REC's latencies without the requests a gap of GAPS ([(start, end)], sorted) overlaps: a
    virtual CPU the service runs on was off its host CPU then (stallwatch.c). None when REC has
    no request start times."""
    starts = rec.get("t0_s")
    lat = rec.get("lat_ms", [])
    if not starts or len(starts) != len(lat):
        return None
    ends = [g[1] for g in gaps]
    out = []
    for t0, ms in zip(starts, lat):
        t1 = t0 + ms / 1e3
        # The first gap ending after the request starts: it overlaps iff it starts before the end.
        i = bisect.bisect_right(ends, t0)
        if i < len(gaps) and gaps[i][0] < t1:
            continue
        out.append(ms)
    return out


def gaps_for(raw, setup):
    """The stall gaps of the CPUs SETUP's service ran on, as sorted (start, end); None without a
    stallwatch record."""
    sw = raw.get("stallwatch")
    if not sw:
        return None
    cpus = (raw.get("cpus") or {}).get("both" if setup == "P" else "hp")
    mine = None if not cpus else {int(c) for c in cpus.split(",")}
    # A watcher that could not run real-time waits behind a spinning thread for the scheduler's
    # slice (~6 ms measured on the GPU machine): only longer gaps are the CPU's own.
    least = 0.0 if sw.get("fifo") else NON_FIFO_STALL_S
    return sorted((g[1], g[2]) for g in sw["gaps"]
                  if (mine is None or g[0] in mine) and g[2] - g[1] > least)


def sampling(reps, draws=200, seed=1):
    """What sampling alone does to a cell's HP p99 ratio. REPS are (co-located, alone) latency
    lists, one pair per repeat. Pooling each side over the repeats gives one distribution per
    side, as if every repeat had measured the same machine; from those, the p99 ratio of all
    requests together with its 90 % bootstrap interval, and the repeat-to-repeat spread that
    repeats of the same sizes drawn from them would show (median over DRAWS draws of as many
    repeats). An observed spread near this one is the statistic's own noise, not the machine's."""
    pc = [x for c, _ in reps for x in c]
    pa = [x for _, a in reps for x in a]
    if len(reps) < 2 or not pc or not pa:
        return None
    rnd = random.Random(seed)
    ratios, spreads = [], []
    for _ in range(draws):
        ratios.append(pct(rnd.choices(pc, k=len(pc)), .99) / pct(rnd.choices(pa, k=len(pa)), .99))
        spreads.append(spread([pct(rnd.choices(pc, k=len(c)), .99) / pct(rnd.choices(pa, k=len(a)), .99)
                               for c, a in reps]))
    ratios.sort()
    return {"pooled": pct(pc, .99) / pct(pa, .99), "pooled_lo": ratios[int(.05 * draws)],
            "pooled_hi": ratios[int(.95 * draws) - 1], "spread": med(spreads)}


def load(d):
    raws = []
    for path in sorted(glob.glob(os.path.join(d, "raw-*.json"))):
        with open(path) as f:
            raw = json.load(f)
        raw["_file"] = os.path.basename(path)
        raws.append(raw)
    return raws


def cells(raws):
    """Every (hp, be, setup, mode) measured, with its repeats' figures, medians and rules. The
    repeats of one setup may come from several runs (`--first-rep`): a repeat is (run, index),
    its baselines come from the same run and index, and a cell asks for as many repeats as
    there are distinct indices asked for its setup, job and service (runs may split the
    services between them; less those a run's budget skipped,
    which it lists, and those whose records were excluded afterwards for a wrong method)."""
    out, costs = [], []
    idx, asked, busies, excluded = {}, {}, {}, set()
    for raw in raws:
        f, a = raw["_file"], raw["args"]
        first = a.get("first_rep", 0)
        for setup in a["setups"]:
            # A repeat the run's time budget skipped (it says so) was never measured, not failed.
            skipped = {s["rep"] for s in raw.get("skipped", []) if s.get("setup") == setup}
            for be in a["bes"]:
                for hp in a.get("hps") or HPS:
                    asked.setdefault((setup, be, hp), set()).update(
                        set(range(first, first + a["repeats"])) - skipped)
            for h, v in raw.get("busy", {}).items():
                if v.get("busy") is not None:
                    busies.setdefault((setup, h), []).append(v["busy"])
        for r in raw["records"]:
            r["_file"] = f
            g = gaps_for(raw, r["setup"])
            if g is not None and "lat_ms" in r:
                r["_clean"] = stall_free(r, g)
            if r.get("excluded"):
                # Measured by a method found wrong afterwards (the record says why): not a
                # repeat of its cell at all, neither valid nor failed.
                excluded.add((r["setup"], r.get("be"), r.get("hp"), r["rep"]))
                continue
            idx[(r["kind"], r["setup"], r["mode"], (f, r["rep"]), r.get("hp"), r.get("be"))] = r
    runs = sorted({k[3] for k in idx})
    setups = sorted({k[1] for k in idx}, key=SETUPS.index)
    for setup in setups:
        modes = [m for m in MODES if any(k[0] == "coloc" and k[1] == setup and k[2] == m for k in idx)]
        for hp in HPS:
            # Baton's own cost: HP alone under Baton over HP alone natively, repeat by repeat.
            pairs = []
            for rep in runs:
                a = idx.get(("alone", setup, "native", rep, hp, None))
                b = idx.get(("alone", setup, "baton", rep, hp, None))
                if ok(a, a and a["n"]) and ok(b, b and b["n"]):
                    pairs.append((pct(b["lat_ms"], .5) / pct(a["lat_ms"], .5),
                                  statistics.fmean(b["lat_ms"]) / statistics.fmean(a["lat_ms"]),
                                  pct(b["lat_ms"], .99) / pct(a["lat_ms"], .99)))
            if pairs:
                costs.append({"setup": setup, "hp": hp, "repeats": len(pairs),
                              "p50_ratio_median": med([p[0] for p in pairs]),
                              "p50_ratio_min": min(p[0] for p in pairs), "p50_ratio_max": max(p[0] for p in pairs),
                              "mean_ratio_median": med([p[1] for p in pairs]),
                              "p99_ratio_median": med([p[2] for p in pairs])})
            busy = med(busies.get((setup, hp), []))
            for be in BES:
                want = len({i for i in asked.get((setup, be, hp), ()) if (setup, be, hp, i) not in excluded})
                for mode in modes:
                    reps = []
                    for rep in runs:
                        c = idx.get(("coloc", setup, mode, rep, hp, be))
                        if c is None:
                            continue
                        # A phased measurement brings its own alone baseline (matrix.py --phases).
                        alone = (idx.get(("alone_paired", setup, mode, rep, hp, be))
                                 or idx.get(("alone", setup, "native", rep, hp, None)))
                        reps.append(one_repeat(c, alone,
                                               idx.get(("be_alone", setup, "native", rep, None, be)),
                                               idx.get(("coloc", setup, "native", rep, hp, be))))
                    if not reps:
                        continue
                    good = [r for r in reps if r["valid"]]
                    # Only valid repeats carry their latencies (not kept in the summary).
                    samp = sampling([(r.pop("_co"), r.pop("_alone")) for r in good])

                    def col(k, good=good):
                        return [r[k] for r in good if r.get(k) is not None]
                    p99r, p50r = col("hp_p99_ratio"), col("hp_p50_ratio")
                    out.append({
                        "hp": hp, "be": be, "setup": setup, "mode": mode,
                        "repeats": len(good), "repeats_asked": want,
                        "valid": len(good) >= want and len(good) == len(reps),
                        "hp_p99_ratio_median": med(p99r), "hp_p99_ratio_min": min(p99r, default=None),
                        "hp_p99_ratio_max": max(p99r, default=None), "hp_p99_ratio_spread": spread(p99r),
                        "hp_p99_ratio_clean_median": med(col("hp_p99_ratio_clean")),
                        "hp_p99_ratio_clean_min": min(col("hp_p99_ratio_clean"), default=None),
                        "hp_p99_ratio_clean_max": max(col("hp_p99_ratio_clean"), default=None),
                        "hp_p99_ratio_clean_spread": spread(col("hp_p99_ratio_clean")),
                        "stalled_requests": sum(col("stalled")) if col("stalled") else None,
                        "hp_p99_ratio_pooled": samp and samp["pooled"],
                        "hp_p99_ratio_pooled_lo": samp and samp["pooled_lo"],
                        "hp_p99_ratio_pooled_hi": samp and samp["pooled_hi"],
                        "hp_p99_ratio_sampling_spread": samp and samp["spread"],
                        "timed_requests": sum(col("requests")) if col("requests") else None,
                        "hp_p50_ratio_median": med(p50r), "hp_p50_ratio_min": min(p50r, default=None),
                        "hp_p50_ratio_max": max(p50r, default=None),
                        "hp_p99_ms_median": med(col("hp_p99_ms")), "alone_p99_ms_median": med(col("alone_p99_ms")),
                        "be_share_alone_median": med(col("be_share_alone")),
                        "be_share_alone_min": min(col("be_share_alone"), default=None),
                        "be_share_alone_max": max(col("be_share_alone"), default=None),
                        "be_share_native_median": med(col("be_share_native")),
                        "hp_gpu_busy": busy, "raw": sorted({r["run"] for r in reps}),
                        "per_repeat": reps})
    by = {(c["hp"], c["be"], c["setup"], c["mode"]): c for c in out}
    for c in out:
        nat = by.get((c["hp"], c["be"], c["setup"], "native"))
        judge(c, nat)
        c["rule_in_doubt"] = nat is not None and other_rule_holds(c, nat)
        c["beyond_noise"] = beyond_noise(c, nat)
    return out, costs


def ok(r, n=None):
    """Whether measurement R exists, did not fail and (given N) answered N requests."""
    return r is not None and "error" not in r and (n is None or len(r.get("lat_ms", [])) >= n)


def one_repeat(c, alone, be_alone, nat):
    """One repeat of a cell: its figures, or why it is invalid."""
    why = None
    if not ok(c, c["n"]):
        why = c.get("error", "fewer requests than asked")
    elif not c.get("be_covered"):
        why = "BE did not cover HP's window"
    elif not ok(alone, alone and alone["n"]):
        why = "no HP-alone baseline in this repeat"
    elif not ok(be_alone) or not be_alone.get("rate"):
        why = "no BE-alone baseline in this repeat"
    out = {"run": c.get("_file"), "rep": c["rep"], "valid": why is None, "why": why}
    if why is None:
        a50, a99 = pct(alone["lat_ms"], .5), pct(alone["lat_ms"], .99)
        out.update(_co=c["lat_ms"], _alone=alone["lat_ms"],
                   hp_p50_ms=pct(c["lat_ms"], .5), hp_p99_ms=pct(c["lat_ms"], .99),
                   alone_p50_ms=a50, alone_p99_ms=a99,
                   hp_p50_ratio=pct(c["lat_ms"], .5) / a50, hp_p99_ratio=pct(c["lat_ms"], .99) / a99,
                   be_rate=c["be_rate"], be_unit=c.get("be_unit"), be_alone_rate=be_alone["rate"],
                   be_share_alone=c["be_rate"] / be_alone["rate"])
        if ok(nat) and nat.get("be_covered") and nat.get("be_rate"):
            out["be_share_native"] = c["be_rate"] / nat["be_rate"]
        cc, ac = c.get("_clean"), alone.get("_clean")
        if cc and ac:
            out.update(hp_p99_ratio_clean=pct(cc, .99) / pct(ac, .99),
                       stalled=len(c["lat_ms"]) - len(cc) + len(alone["lat_ms"]) - len(ac),
                       requests=len(c["lat_ms"]) + len(alone["lat_ms"]))
    return out


def judge(c, nat):
    """The three rules' results: PASS, FAIL, n/a (the rule does not apply) or invalid."""
    if not c["valid"] or nat is None or not nat["valid"] or c["hp_p99_ratio_median"] is None:
        c.update(protect="invalid", no_harm="invalid", work_conserving="invalid")
        return
    r, nr = c["hp_p99_ratio_median"], nat["hp_p99_ratio_median"]
    c["protect"] = "PASS" if r <= PROTECT and r <= nr + 1e-9 else "FAIL"
    if nr <= PROTECT:
        c["no_harm"] = "PASS" if holds(c, "no_harm") else "FAIL"
        c["work_conserving"] = "n/a"
    else:
        c["no_harm"] = "n/a"
        wc = holds(c, "work_conserving")
        c["work_conserving"] = "invalid" if wc is None else "PASS" if wc else "FAIL"


def wc_bound(busy):
    """The work-conserving rule's bound on the job's share of alone beside a service that keeps
    the GPU busy BUSY of the time."""
    return SHARE_OF_IDLE * (1 - busy)


def holds(c, rule):
    """Whether cell C's job meets RULE (`no_harm` or `work_conserving`) on its medians; None
    where the figures it needs are missing."""
    if rule == "no_harm":
        share = c["be_share_native_median"]
        return None if share is None else share >= NO_HARM
    busy, share = c["hp_gpu_busy"], c["be_share_alone_median"]
    return None if busy is None or share is None else share >= wc_bound(busy)


def beyond_noise(c, nat):
    """Which of the rules cell C fails by more than its own noise, or None where it fails none
    (or cannot be judged). The rules compare medians of three or more repeats whose HP p99
    ratios spread by tens of per cent, so a failed comparison may be no effect at all:
      protect (x1.10)   fails beyond the noise when the 90 % interval of the pooled p99 ratio
                        lies above x1.10;
      protect (native)  when that interval lies above native's;
      no harm           when every repeat kept BE under 90 % of native's;
      work-conserving   when every repeat kept BE under the bound;
    and a job's rule not where native's pooled interval contains x1.10 and the other job's rule
    holds: which of the two applies then turns on native's noise (`rule_in_doubt`, set before).
    Without a pooled interval (fewer than two valid repeats) a failed protect counts as real."""
    if "invalid" in (c["protect"], c["no_harm"], c["work_conserving"]):
        return None
    out = []
    if c["protect"] == "FAIL":
        lo = c.get("hp_p99_ratio_pooled_lo")
        r, nr = c["hp_p99_ratio_median"], nat["hp_p99_ratio_median"]
        if r > PROTECT and (lo is None or lo > PROTECT):
            out.append("protect (×1.10)")
        nat_hi = nat.get("hp_p99_ratio_pooled_hi")
        if r > nr + 1e-9 and (lo is None or nat_hi is None or lo > nat_hi):
            out.append("protect (native)")
    shares = [r for r in c["per_repeat"] if r["valid"]]
    if c["no_harm"] == "FAIL" and not c["rule_in_doubt"]:
        got = [r.get("be_share_native") for r in shares if r.get("be_share_native") is not None]
        if not got or max(got) < NO_HARM:
            out.append("no harm")
    if c["work_conserving"] == "FAIL" and not c["rule_in_doubt"]:
        if max(r["be_share_alone"] for r in shares) < wc_bound(c["hp_gpu_busy"]):
            out.append("work-conserving")
    return out


def other_rule_holds(c, nat):
    """Whether cell C fails the job's rule that native's median p99 chose while native's pooled
    p99 interval contains x1.10, and the other job's rule holds: no harm (90 % of native's
    share) where work-conserving was applied, or the reverse."""
    lo, hi = nat.get("hp_p99_ratio_pooled_lo"), nat.get("hp_p99_ratio_pooled_hi")
    if lo is None or hi is None or not lo <= PROTECT <= hi:
        return False
    if c["work_conserving"] == "FAIL":
        return bool(holds(c, "no_harm"))
    if c["no_harm"] == "FAIL":
        return bool(holds(c, "work_conserving"))
    return False


def fx(v, digits=2):
    return "—" if v is None else f"×{v:.{digits}f}"


def fpct(v):
    return "—" if v is None else f"{100 * v:.0f} %"


def rng(c, k):
    lo, hi = c.get(f"{k}_min"), c.get(f"{k}_max")
    return "" if lo is None else f" ({lo:.2f}–{hi:.2f})"


def in_order(cs):
    """Cells by setup, service, job and mode, as every table lists them."""
    return sorted(cs, key=lambda c: (SETUPS.index(c["setup"]), HPS.index(c["hp"]), BES.index(c["be"]),
                                     MODES.index(c["mode"])))


def table(summary):
    cs = summary["cells"]
    lines = ["| setup | HP | BE | HP busy alone | mode | HP p50 × alone | HP p99 × alone (min–max) | p99 spread "
             "| BE in window, % of alone (min–max) | % of native's | protect | no harm | work-conserving | repeats |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    order = in_order(cs)
    for c in order:
        sp = c["hp_p99_ratio_spread"]
        bmin, bmax = c["be_share_alone_min"], c["be_share_alone_max"]
        brange = "" if bmin is None else f" ({100 * bmin:.0f}–{100 * bmax:.0f})"
        lines.append(
            f"| {c['setup']} | {c['hp']} | {c['be']} | {fpct(c['hp_gpu_busy'])} | {c['mode']} "
            f"| {fx(c['hp_p50_ratio_median'])} | {fx(c['hp_p99_ratio_median'])}{rng(c, 'hp_p99_ratio')} "
            f"| {fpct(sp)} | {fpct(c['be_share_alone_median'])}{brange} | {fpct(c['be_share_native_median'])} "
            f"| {c['protect']} | {c['no_harm']} | {c['work_conserving']} "
            f"| {c['repeats']}/{c['repeats_asked']}{'' if c['valid'] else ' invalid'} |")
    return "\n".join(lines)


def cell_table(summary, needs, columns, row):
    """A table of the cells that have `needs`, one row each (`row(cell)`: what follows the
    cell's setup, HP, BE and mode), in the matrix's order; empty when no cell has it."""
    cs = [c for c in summary["cells"] if c.get(needs) is not None]
    if not cs:
        return ""
    head = ["setup", "HP", "BE", "mode", *columns]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += [f"| {c['setup']} | {c['hp']} | {c['be']} | {c['mode']} | {row(c)} |" for c in in_order(cs)]
    return "\n".join(lines)


def noise_table(summary):
    """Per cell: the repeat-to-repeat spread of the HP p99 ratio, the spread sampling alone would
    give repeats of the same sizes, and the p99 ratio of all repeats' requests pooled with its
    90 % bootstrap interval."""
    return cell_table(
        summary, "hp_p99_ratio_sampling_spread",
        ["p99 × alone, median of repeats (min–max)", "spread", "spread from sampling alone",
         "pooled p99 × alone (90 % interval)"],
        lambda c: f"{fx(c['hp_p99_ratio_median'])}{rng(c, 'hp_p99_ratio')} | {fpct(c['hp_p99_ratio_spread'])} "
                  f"| {fpct(c['hp_p99_ratio_sampling_spread'])} | {fx(c['hp_p99_ratio_pooled'])} "
                  f"({c['hp_p99_ratio_pooled_lo']:.2f}–{c['hp_p99_ratio_pooled_hi']:.2f})")


def paired_table(summary):
    """Per cell and mode other than native: its HP p99 over native's, repeat by repeat (each
    repeat runs every mode back to back, under the same host conditions), their median and how
    many were above native. Empty when no cell has native and another mode in a same repeat."""
    by = {(c["setup"], c["hp"], c["be"], c["mode"]): c for c in summary["cells"]}
    rows = []
    for c in in_order([c for c in summary["cells"] if c["mode"] != "native"]):
        nat = by.get((c["setup"], c["hp"], c["be"], "native"))
        if nat is None:
            continue
        base = {r["rep"]: r["hp_p99_ratio"] for r in nat["per_repeat"] if r["valid"]}
        pairs = [(r["rep"], r["hp_p99_ratio"] / base[r["rep"]]) for r in c["per_repeat"]
                 if r["valid"] and base.get(r["rep"])]
        if not pairs:
            continue
        ratios = [x for _, x in sorted(pairs)]
        above = sum(x > 1.0 for x in ratios)
        rows.append(f"| {c['setup']} | {c['hp']} | {c['be']} | {c['mode']} "
                    f"| {', '.join(f'{x:.2f}' for x in ratios)} | {fx(statistics.median(ratios))} "
                    f"| {above} of {len(ratios)} |")
    if not rows:
        return ""
    return "\n".join(["| setup | HP | BE | mode | p99 ÷ native's, repeat by repeat | median | above native |",
                      "| --- | --- | --- | --- | --- | --- | --- |", *rows])


def window_table(d, raws):
    """From the exit reports of Baton's workers (`BATON_REPORT=DIR/reports/`, matched by pid
    through each raw file's `workers`, or for raw files from before those were recorded, the
    consoles' "NAME ready (pid N, baton=B)" lines), how each kept its launch window: sync
    points and commands deferred to the launch worker. A service that nothing outranks keeps
    none once the daemon has answered; more than one sync point per thousand commands says it
    was held to its window or measured again (docs/benchmarks/matrix/remeasure/). Empty
    without reports."""
    workers = {}
    for raw in raws:
        workers.update({(n, w["pid"]): w["baton"] for n, w in raw.get("workers", {}).items()})
    if not workers:
        for path in sorted(glob.glob(os.path.join(d, "console*.txt"))):
            with open(path) as f:
                for m in re.finditer(r"\] (\S+) ready \(pid (\d+), baton=(True|False)\)", f.read()):
                    workers[(m[1], int(m[2]))] = m[3] == "True"
    rows = []
    for (name, pid), baton in sorted(workers.items()):
        path = os.path.join(d, "reports", f"baton-report-{pid}.json")
        if not baton or not os.path.exists(path):
            continue
        with open(path) as f:
            rep = json.load(f)
        n, sp = rep.get("commands") or 0, rep.get("sync_points") or 0
        per = 1000.0 * sp / n if n else 0.0
        if name.startswith("P/"):
            flag = service_stream(rep)
        else:
            flag = "kept its window" if name.endswith("/hp") and per > KEPT_WINDOW else ""
        rows.append(f"| {name} | {pid} | {n} | {sp} | {per:.1f} | {rep.get('deferred', 0)} | {flag} |")
    if not rows:
        return ""
    return "\n".join(["| worker | pid | commands | sync points | per 1000 commands | deferred | |",
                      "| --- | --- | --- | --- | --- | --- | --- |", *rows])


def service_stream(rep):
    """For a worker running both roles in one process (P): the window of the service's stream,
    the most urgent one with commands, from its own sync points; the process's total is mostly
    the held job's. Reports from before a stream's sync points were listed cannot tell."""
    qs = [q for q in rep.get("queues", []) if q.get("commands")]
    if not qs or "sync_points" not in qs[0]:
        return "both roles in one process: not told apart"
    q = max(qs, key=lambda q: q.get("priority", 0))
    per = 1000.0 * q["sync_points"] / q["commands"]
    return f"service's stream {per:.1f} per 1000" + (": kept its window" if per > KEPT_WINDOW else "")


def stall_table(summary):
    """Per cell with stallwatch data: the p99 ratio and its spread with every request, and
    without the requests a stall of the service's virtual CPUs overlapped."""
    def row(c):
        hit = c.get("stalled_requests")
        share = f"{hit} of {c['timed_requests']}" if hit is not None else "—"
        return (f"{fx(c['hp_p99_ratio_median'])}{rng(c, 'hp_p99_ratio')} | {fpct(c['hp_p99_ratio_spread'])} "
                f"| {fx(c['hp_p99_ratio_clean_median'])}{rng(c, 'hp_p99_ratio_clean')} "
                f"| {fpct(c['hp_p99_ratio_clean_spread'])} | {share}")
    return cell_table(
        summary, "hp_p99_ratio_clean_median",
        ["p99 × alone (min–max), all requests", "spread", "p99 × alone (min–max), stall-free", "spread",
         "requests a stall hit"],
        row)


def headline(summary):
    """One line per (setup, HP, BE): native against Baton's default flags."""
    by = {(c["hp"], c["be"], c["setup"], c["mode"]): c for c in summary["cells"]}
    lines = ["| setup | HP / BE | native: HP p99 × alone, BE % of alone | Baton: HP p99 × alone, BE % of alone "
             "| Baton's rules (protect, no harm / work-conserving) |",
             "| --- | --- | --- | --- | --- |"]
    for s in SETUPS:
        for h in HPS:
            for b in BES:
                n, t = by.get((h, b, s, "native")), by.get((h, b, s, "baton"))
                if not n or not t:
                    continue
                second = t["no_harm"] if t["no_harm"] != "n/a" else t["work_conserving"]
                lines.append(f"| {s} | {h} / {b} | {fx(n['hp_p99_ratio_median'])}, {fpct(n['be_share_alone_median'])} "
                             f"| {fx(t['hp_p99_ratio_median'])}, {fpct(t['be_share_alone_median'])} "
                             f"| {t['protect']}, {second} |")
    return "\n".join(lines)


def passes(summary, mode="baton"):
    """How many cells of MODE hold all three rules."""
    cs = [c for c in summary["cells"] if c["mode"] == mode]
    return len([c for c in cs if holds_all(c)]), len(cs)


def noise_verdicts(summary, mode="baton"):
    """Per failing cell of MODE: which rules it fails beyond the noise (beyond_noise)."""
    cs = [c for c in in_order(summary["cells"]) if c["mode"] == mode and c.get("beyond_noise") is not None
          and ("FAIL" in (c["protect"], c["no_harm"], c["work_conserving"]))]
    if not cs:
        return ""
    by = {(c["hp"], c["be"], c["setup"], c["mode"]): c for c in summary["cells"]}
    lines = ["| setup | HP / BE | rules failed | failed beyond the noise | native's job against the same bound |",
             "| --- | --- | --- | --- | --- |"]
    for c in cs:
        failed = [name for k, name in (("protect", "protect"), ("no_harm", "no harm"),
                                       ("work_conserving", "work-conserving")) if c[k] == "FAIL"]
        doubt = " (the job's rule turns on native's p99, whose interval contains ×1.10; the other holds)" \
            if c.get("rule_in_doubt") else ""
        lines.append(f"| {c['setup']} | {c['hp']} / {c['be']} | {', '.join(failed)} "
                     f"| {', '.join(c['beyond_noise']) or 'none'}{doubt} "
                     f"| {native_against_bound(c, by.get((c['hp'], c['be'], c['setup'], 'native')))} |")
    return "\n".join(lines)


def native_against_bound(c, nat):
    """For a cell failing the work-conserving rule: whether native co-location's job reached the
    same bound (where even native's does not, the limit is the device's own sharing, not a
    scheduling decision); "—" for other cells."""
    if c["work_conserving"] != "FAIL" or nat is None or nat.get("be_share_alone_median") is None:
        return "—"
    bound, share = wc_bound(c["hp_gpu_busy"]), nat["be_share_alone_median"]
    verdict = "reaches it" if share >= bound else "misses it too"
    return f"{verdict}: {fpct(share)} against {fpct(bound)}"


def holds_all(c):
    """Whether cell C holds all three rules: protect passes, and neither job rule failed or is
    invalid."""
    return c["protect"] == "PASS" and not {"FAIL", "invalid"} & {c["no_harm"], c["work_conserving"]}


def compare(summaries, names, mode="baton"):
    """Several runs of the same matrix side by side, one line per cell present in every run:
    each run's verdicts for MODE (protect, then the job's rule that applied) and whether the
    cell held all three rules in every run, in some or in none. A verdict that changes between
    runs of the same decisions is a property of the noise, not of the scheduler."""
    runs = [{(c["setup"], c["hp"], c["be"]): c for c in sm["cells"] if c["mode"] == mode} for sm in summaries]
    keys = sorted(set.intersection(*(set(r) for r in runs)),
                  key=lambda k: (SETUPS.index(k[0]), HPS.index(k[1]), BES.index(k[2])))
    lines = ["| setup | HP / BE | " + " | ".join(names) + " | held all three | failed beyond the noise |",
             "| --- | --- | " + " | ".join("---" for _ in names) + " | --- | --- |"]
    every = some = beyond = 0
    for k in keys:
        cs = [r[k] for r in runs]
        cols = []
        for c in cs:
            second = c["no_harm"] if c["no_harm"] != "n/a" else c["work_conserving"]
            cols.append(f"{c['protect']}, {second} ({fx(c['hp_p99_ratio_median'])}, "
                        f"{fpct(c['be_share_alone_median'])})")
        held = sum(holds_all(c) for c in cs)
        word = "every run" if held == len(cs) else "none" if held == 0 else f"{held} of {len(cs)}"
        every += held == len(cs)
        some += 0 < held < len(cs)
        failed = [set(c.get("beyond_noise") or []) for c in cs]
        always = all(failed)
        beyond += always
        lines.append(f"| {k[0]} | {k[1]} / {k[2]} | " + " | ".join(cols) +
                     f" | {word} | {'every run' if always else '—'} |")
    lines += ["", f"Cells holding all three rules in every run: {every} of {len(keys)}; in some runs only: {some}; "
              f"failing some rule beyond the noise in every run: {beyond}."]
    return "\n".join(lines)


def within_noise(summary, mode="baton"):
    """How many cells of MODE fail no rule beyond the noise (passing ones included)."""
    cs = [c for c in summary["cells"] if c["mode"] == mode]
    return len([c for c in cs if c.get("beyond_noise") == []]), len(cs)


def pareto_svg(summary, setup):
    """x: HP p99 × alone; y: BE % of alone; one arrow per cell from native to each Baton mode."""
    by = {(c["hp"], c["be"], c["mode"]): c for c in summary["cells"] if c["setup"] == setup}
    pts = [c for c in by.values() if c["hp_p99_ratio_median"] is not None and c["be_share_alone_median"] is not None]
    if not pts:
        return None
    W, H, L, B_, T_, R_ = 640, 420, 60, 50, 30, 20
    xmax = max(1.5, max(c["hp_p99_ratio_median"] for c in pts) * 1.05)
    xmin = min(0.9, min(c["hp_p99_ratio_median"] for c in pts) * 0.95)
    ymax = max(1.1, max(c["be_share_alone_median"] for c in pts) * 1.05)
    lx = lambda v: math.log(v)  # noqa: E731  (the x axis is logarithmic: ratios)

    def X(v):
        return L + (lx(v) - lx(xmin)) / (lx(xmax) - lx(xmin)) * (W - L - R_)

    def Y(v):
        return H - B_ - v / ymax * (H - B_ - T_)
    colors = MODE_COLORS
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
         '<defs>' + "".join(f'<marker id="a-{m}" markerWidth="8" markerHeight="8" refX="7" refY="3" orient="auto">'
                            f'<path d="M0,0 L7,3 L0,6 z" fill="{col}"/></marker>' for m, col in colors.items()) + '</defs>',
         f'<rect x="0" y="0" width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="16" text-anchor="middle" font-size="13">{setup}: {SETUP_NAMES[setup]}</text>',
         f'<line x1="{L}" y1="{H - B_}" x2="{W - R_}" y2="{H - B_}" stroke="black"/>',
         f'<line x1="{L}" y1="{T_}" x2="{L}" y2="{H - B_}" stroke="black"/>']
    ticks = [t for t in (0.9, 1.0, 1.1, 1.25, 1.5, 2, 3, 5, 10, 20, 50) if xmin <= t <= xmax]
    for t in ticks:
        s.append(f'<line x1="{X(t):.1f}" y1="{H - B_}" x2="{X(t):.1f}" y2="{H - B_ + 4}" stroke="black"/>'
                 f'<text x="{X(t):.1f}" y="{H - B_ + 16}" text-anchor="middle">×{t:g}</text>')
    for t in [i / 10 for i in range(0, int(ymax * 10) + 1, 2)]:
        s.append(f'<line x1="{L - 4}" y1="{Y(t):.1f}" x2="{L}" y2="{Y(t):.1f}" stroke="black"/>'
                 f'<text x="{L - 6}" y="{Y(t) + 4:.1f}" text-anchor="end">{100 * t:.0f} %</text>')
    s.append(f'<line x1="{X(PROTECT):.1f}" y1="{T_}" x2="{X(PROTECT):.1f}" y2="{H - B_}" stroke="#2ca02c" '
             f'stroke-dasharray="4,3"/><text x="{X(PROTECT) + 3:.1f}" y="{T_ + 10}" fill="#2ca02c">×1.10</text>')
    s.append(f'<text x="{(L + W - R_) / 2}" y="{H - 12}" text-anchor="middle">HP p99 × alone (log scale)</text>')
    s.append(f'<text x="14" y="{(T_ + H - B_) / 2}" text-anchor="middle" '
             f'transform="rotate(-90 14 {(T_ + H - B_) / 2})">BE in HP\'s window, % of BE alone</text>')
    for (h, b, m), c in sorted(by.items()):
        if m == "native" or c not in pts or (h, b, "native") not in by or by[(h, b, "native")] not in pts:
            continue
        n = by[(h, b, "native")]
        s.append(f'<line x1="{X(n["hp_p99_ratio_median"]):.1f}" y1="{Y(n["be_share_alone_median"]):.1f}" '
                 f'x2="{X(c["hp_p99_ratio_median"]):.1f}" y2="{Y(c["be_share_alone_median"]):.1f}" '
                 f'stroke="{colors[m]}" stroke-width="1.5" marker-end="url(#a-{m})"/>')
    for (h, b, m), c in sorted(by.items()):
        if c not in pts:
            continue
        x, y = X(c["hp_p99_ratio_median"]), Y(c["be_share_alone_median"])
        fill = "white" if m == "native" else colors[m]
        s.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{fill}" stroke="{colors[m]}"/>')
        if m == "native":
            s.append(f'<text x="{x + 6:.1f}" y="{y - 6:.1f}">{h}/{b}</text>')
    ly = T_ + 8
    for m, col in colors.items():
        if any(k[2] == m for k in by):
            s.append(f'<circle cx="{W - R_ - 90}" cy="{ly}" r="4" fill="{"white" if m == "native" else col}" '
                     f'stroke="{col}"/><text x="{W - R_ - 80}" y="{ly + 4}">{m}</text>')
            ly += 16
    s.append("</svg>")
    return "\n".join(s)


def summarize(raws):
    cs, costs = cells(raws)
    machines = sorted({r["machine"]["gpu"] for r in raws})
    commits = sorted({r.get("commit", "unknown") for r in raws})
    busy = {}
    for r in raws:
        for h, v in r.get("busy", {}).items():
            if v.get("busy") is not None:
                busy.setdefault(h, []).append(v["busy"])
    busy = {h: med(v) for h, v in busy.items()}
    methods = sorted({r["args"].get("think", "hybrid") for r in raws})
    if len(methods) > 1:
        sys.exit(f"runs with different methods (think: {', '.join(methods)}) cannot be merged: keep them apart")
    return {"schema": 1, "machine": "; ".join(machines), "commit": ", ".join(commits), "think": methods[0],
            "runs": [{"file": r["_file"], "setups": r["args"]["setups"], "repeats": r["args"]["repeats"],
                      "elapsed_s": r.get("elapsed_s"), "started": r.get("started"), "skipped": r.get("skipped", []),
                      "notes": r.get("notes", []), "machine": r["machine"], "commit": r.get("commit")} for r in raws],
            "hp_gpu_busy": busy, "baton_alone_cost": costs, "cells": cs}


def main(argv):
    if argv == ["--self-test"]:
        self_test()
        return
    if argv[:1] == ["--compare"]:
        dirs = argv[1:]
        if len(dirs) < 2:
            sys.exit("analyze.py --compare needs two directories or more, each with a summary.json")
        summaries = []
        for d in dirs:
            try:
                with open(os.path.join(d, "summary.json")) as f:
                    summaries.append(json.load(f))
            except OSError as e:
                sys.exit(f"{d}: no summary.json ({e.strerror}); run analyze.py {d} first")
        print(compare(summaries, [os.path.basename(os.path.normpath(d)) for d in dirs]))
        return
    if len(argv) != 1:
        sys.exit(__doc__)
    d = argv[0]
    raws = load(d)
    if not raws:
        sys.exit(f"no raw-*.json in {d}")
    summary = summarize(raws)
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    good, n = passes(summary)
    quiet, _ = within_noise(summary)
    text = ["## Headline (Baton's default flags)", "", headline(summary), "",
            f"Baton cells holding all three rules: {good} of {n}.", ""]
    verdicts = noise_verdicts(summary)
    if verdicts:
        text += ["### The failures against the noise", "",
                 "A failed comparison of medians may be no effect at all. Beyond the noise: protect's "
                 "pooled p99 ratio with its whole 90 % interval above ×1.10, or above native's "
                 "interval; a BE rule failed in every repeat, unless native's pooled p99 interval "
                 "contains ×1.10 (then which BE rule applies is itself noise) and the other BE rule "
                 "holds.", "", verdicts, "",
                 f"Baton cells failing no rule beyond the noise: {quiet} of {n} (holding all three: {good}).", ""]
    text += ["## Every cell", "", table(summary), "", "## Baton's own cost (HP alone under Baton ÷ HP alone native)", "",
            "| setup | HP | p50 ratio, median (min–max) | mean ratio | p99 ratio | repeats |", "| --- | --- | --- | --- | --- | --- |"]
    for c in summary["baton_alone_cost"]:
        text.append(f"| {c['setup']} | {c['hp']} | {fx(c['p50_ratio_median'], 3)} ({c['p50_ratio_min']:.3f}–"
                    f"{c['p50_ratio_max']:.3f}) | {fx(c['mean_ratio_median'], 3)} | {fx(c['p99_ratio_median'], 3)} "
                    f"| {c['repeats']} |")
    paired = paired_table(summary)
    if paired:
        text += ["", "## Paired by repeat: each mode's HP p99 over native's in the same repeat", "", paired]
    noise = noise_table(summary)
    if noise:
        text += ["", "## Noise: the spread of p99 ratios against what sampling alone gives", "", noise]
    stalls = stall_table(summary)
    if stalls:
        text += ["", "## Without the requests a vCPU stall hit (stallwatch)", "", stalls]
    windows = window_table(d, raws)
    if windows:
        text += ["", "## Baton's workers: their launch windows (exit reports)", "", windows]
    with open(os.path.join(d, "table.md"), "w") as f:
        f.write("\n".join(text) + "\n")
    for s in SETUPS:
        svg = pareto_svg(summary, s)
        if svg:
            with open(os.path.join(d, f"pareto-{s}.svg"), "w") as f:
                f.write(svg)
    print("\n".join(text))


def self_test():
    assert set(MODE_COLORS) == set(MODES), set(MODES) ^ set(MODE_COLORS)
    assert pct(list(range(1, 101)), .5) == 50 and pct(list(range(1, 101)), .99) == 99
    assert pct([3.0], .99) == 3.0 and pct([], .5) is None
    assert rotate(["a", "b", "c"], 1) == ["b", "c", "a"] and rotate(["a", "b"], 3) == ["b", "a"]
    log = [[0.0, 0.0], [1.0, 10.0], [2.0, 20.0], [4.0, 20.0], [5.0, 30.0]]
    assert progress_at(log, 1.5) == 15.0 and progress_at(log, 3.0) == 20.0 and progress_at(log, 6) is None
    w = window_progress(log, 0.5, 4.5)
    assert w["covered"] and abs(w["units"] - 20.0) < 1e-9 and abs(w["rate"] - 5.0) < 1e-9
    assert not window_progress(log, -1.0, 2.0)["covered"]
    assert steady_rate(log, 0.5, 2.5) == 10.0
    assert thin([[0, 0], [0.01, 1], [0.1, 2], [0.12, 3]], 0.05) == [[0, 0], [0.1, 2], [0.12, 3]]

    # A synthetic run: one setup, two repeats, HP alone at 10 ms; native co-located doubles p99
    # and gives BE half its alone rate, Baton keeps HP at x1.05 and BE at 45 % of alone.
    def lat(ms):
        return [ms] * 99 + [ms * 1.2]
    recs = []
    for rep in range(2):
        recs.append({"kind": "alone", "setup": "S", "mode": "native", "rep": rep, "hp": "R", "n": 100,
                     "lat_ms": lat(10.0)})
        recs.append({"kind": "be_alone", "setup": "S", "mode": "native", "rep": rep, "be": "G", "rate": 100.0})
        for mode, ms, rate in (("native", 20.0, 50.0), ("baton", 10.5, 45.0)):
            recs.append({"kind": "coloc", "setup": "S", "mode": mode, "rep": rep, "hp": "R", "be": "G", "n": 100,
                         "lat_ms": lat(ms), "be_rate": rate, "be_covered": True})
    # A third mode whose second repeat's BE did not cover the window: invalid, not averaged.
    for rep in range(2):
        recs.append({"kind": "coloc", "setup": "S", "mode": "baton-l3", "rep": rep, "hp": "R", "be": "G", "n": 100,
                     "lat_ms": lat(10.0), "be_rate": 10.0, "be_covered": rep == 0})
    raw = {"_file": "raw-S.json", "args": {"repeats": 2, "setups": ["S"], "bes": ["G"]}, "records": recs,
           "busy": {"R": {"busy": 0.4}}, "machine": {"gpu": "test"}, "commit": "x"}
    s = summarize([raw])
    by = {c["mode"]: c for c in s["cells"]}
    n, b, l3 = by["native"], by["baton"], by["baton-l3"]
    assert abs(n["hp_p99_ratio_median"] - 2.0) < 1e-9 and n["protect"] == "FAIL"
    assert abs(b["hp_p99_ratio_median"] - 1.05) < 1e-9 and b["protect"] == "PASS"
    # Native is above x1.10, so work-conserving applies: 45 % >= 0.9 x (1 - 0.4) = 54 %? No.
    assert b["no_harm"] == "n/a" and b["work_conserving"] == "FAIL"
    assert abs(b["be_share_native_median"] - 0.9) < 1e-9
    assert not l3["valid"] and l3["repeats"] == 1 and l3["protect"] == "invalid"
    assert passes(s) == (0, 1)
    assert "×1.05" in table(s) and "| S | R / G |" in headline(s)
    # Baton's BE share failed the bound in both repeats: a failure beyond the noise (native's
    # p99, x2.0 in every request's tail, leaves no doubt which BE rule applies).
    assert b["beyond_noise"] == ["work-conserving"] and within_noise(s) == (0, 1)
    assert not b["rule_in_doubt"]
    # Where native's interval contains x1.10, a job's rule that fails while the other holds
    # is in doubt, not a failure beyond the noise.
    doubt = dict(b, work_conserving="FAIL", no_harm="n/a", be_share_native_median=0.95)
    assert other_rule_holds(doubt, {"hp_p99_ratio_pooled_lo": 1.05, "hp_p99_ratio_pooled_hi": 1.2})
    assert not other_rule_holds(doubt, {"hp_p99_ratio_pooled_lo": 1.12, "hp_p99_ratio_pooled_hi": 1.2})
    assert not other_rule_holds(dict(doubt, be_share_native_median=0.8),
                                {"hp_p99_ratio_pooled_lo": 1.05, "hp_p99_ratio_pooled_hi": 1.2})
    # Native's job (50 %) misses the same bound too (54 %).
    assert "| S | R / G | work-conserving | work-conserving | misses it too: 50 % against 54 % |" \
        in noise_verdicts(s), noise_verdicts(s)
    assert pareto_svg(s, "S").startswith("<svg") and pareto_svg(s, "M") is None

    # A third repeat from another run (--first-rep 2) joins the cells, with its own baselines.
    extra = {"_file": "raw-S-r2.json", "args": {"repeats": 1, "first_rep": 2, "setups": ["S"], "bes": ["G"]},
             "records": [dict(r, rep=2) for r in recs if r["rep"] == 0 and r["mode"] != "baton-l3"],
             "busy": {"R": {"busy": 0.4}}, "machine": {"gpu": "test"}, "commit": "y"}
    s = summarize([raw, extra])
    by = {c["mode"]: c for c in s["cells"]}
    assert by["baton"]["repeats"] == 3 and by["baton"]["repeats_asked"] == 3 and by["baton"]["valid"]
    assert not by["baton-l3"]["valid"] and by["baton-l3"]["repeats_asked"] == 3
    # Identical repeats still spread by sampling; the pooled ratio sits inside its interval.
    smp = sampling([([1.0] * 97 + [2.0, 3.0, 4.0], [1.0] * 100)] * 3)
    assert smp["pooled"] == 3.0 and smp["pooled_lo"] <= 3.0 <= smp["pooled_hi"] and smp["spread"] > 0.3
    # A tail of 10 % is well inside p99's reach: no sampling spread.
    assert sampling([([1.0] * 90 + [3.0] * 10, [1.0] * 100)] * 3)["spread"] == 0
    assert sampling([([1.0], [1.0])]) is None
    assert "spread from sampling" in noise_table(summarize([raw]))
    # Paired by repeat: each mode against native in the same repeat.
    two = {"cells": [
        {"setup": "S", "hp": "R", "be": "G", "mode": "native", "per_repeat": [
            {"rep": 0, "valid": True, "hp_p99_ratio": 1.0}, {"rep": 1, "valid": True, "hp_p99_ratio": 2.0}]},
        {"setup": "S", "hp": "R", "be": "G", "mode": "baton", "per_repeat": [
            {"rep": 1, "valid": True, "hp_p99_ratio": 1.0}, {"rep": 0, "valid": True, "hp_p99_ratio": 1.5},
            {"rep": 2, "valid": True, "hp_p99_ratio": 9.0}]}]}
    row = paired_table(two).splitlines()[2]
    assert row == "| S | R | G | baton | 1.50, 0.50 | ×1.00 | 1 of 2 |", row
    # Requests a stall of the service's CPUs overlapped leave the stall-free figures only.
    r = {"lat_ms": [10.0, 10.0, 40.0, 10.0], "t0_s": [0.0, 1.0, 2.0, 3.0]}
    assert stall_free(r, [(2.01, 2.03)]) == [10.0, 10.0, 10.0]
    assert stall_free(r, [(0.5, 0.6), (3.5, 3.6)]) == r["lat_ms"]
    assert stall_free({"lat_ms": [1.0]}, []) is None
    sw = {"stallwatch": {"fifo": True, "gaps": [[9, 2.01, 2.03], [1, 1.0, 1.005], [8, 3.0, 3.006]]},
          "cpus": {"hp": "8,9", "both": "8,9,10"}}
    assert gaps_for(sw, "S") == [(2.01, 2.03), (3.0, 3.006)] and gaps_for({}, "S") is None
    sw["stallwatch"]["fifo"] = False
    assert gaps_for(sw, "S") == [(2.01, 2.03)]
    timed = dict(raw, stallwatch={"fifo": True, "gaps": [[8, 0.005, 0.006]]}, cpus={"hp": "8"},
                 records=[dict(x, t0_s=[float(i) for i in range(len(x["lat_ms"]))]) if "lat_ms" in x else x
                          for x in recs])
    by = {c["mode"]: c for c in summarize([timed])["cells"]}
    assert by["baton"]["stalled_requests"] == 4 and by["baton"]["timed_requests"] == 400
    assert "stall-free" in stall_table(summarize([timed]))

    # Exit reports: the service held to its window is flagged, the job and a native worker not.
    import tempfile
    d = tempfile.mkdtemp(prefix="matrix-windows.")
    os.makedirs(os.path.join(d, "reports"))
    for pid, commands, sync in ((11, 3_353_964, 144_960), (12, 1_547_280, 4_822)):
        with open(os.path.join(d, "reports", f"baton-report-{pid}.json"), "w") as f:
            json.dump({"commands": commands, "sync_points": sync, "deferred": 7}, f)
    workers = {"S/baton/hp": {"pid": 11, "baton": True}, "S/baton/be": {"pid": 12, "baton": True},
               "S/native/hp": {"pid": 13, "baton": False}}
    t = window_table(d, [{"workers": workers}])
    lines = {ln.split(" | ")[0].lstrip("| "): ln for ln in t.splitlines()[2:]}
    assert set(lines) == {"S/baton/hp", "S/baton/be"}, t
    assert "kept its window" in lines["S/baton/hp"] and "43.2" in lines["S/baton/hp"], t
    assert "kept its window" not in lines["S/baton/be"], t
    # Both roles in one process: judged by the most urgent stream's own sync points.
    both = {"commands": 3000, "sync_points": 2000, "queues": [
        {"priority": 0, "commands": 1000, "sync_points": 1998},
        {"priority": 1, "commands": 2000, "sync_points": 2}]}
    assert service_stream(both) == "service's stream 1.0 per 1000", service_stream(both)
    both["queues"][1]["sync_points"] = 40
    assert service_stream(both).endswith(": kept its window"), service_stream(both)
    assert "not told apart" in service_stream({"queues": [{"priority": 1, "commands": 5}]})
    # Raw files from before workers were recorded: the console says which pid is which.
    assert window_table(d, [{"workers": {}}]) == ""
    with open(os.path.join(d, "console.txt"), "w") as f:
        f.write("[  29.3 s] S/baton/hp ready (pid 11, baton=True)\n[  29.4 s] S/native/hp ready (pid 13, baton=False)\n")
    assert "kept its window" in window_table(d, [{}]), window_table(d, [{}])
    # Two runs of one cell: held in one, failed beyond the noise in the other.
    one = {"cells": [{"setup": "S", "hp": "R", "be": "G", "mode": "baton", "protect": "PASS", "no_harm": "n/a",
                      "work_conserving": "PASS", "hp_p99_ratio_median": 1.05, "be_share_alone_median": 0.85,
                      "beyond_noise": []}]}
    other = {"cells": [dict(one["cells"][0], protect="FAIL", hp_p99_ratio_median=1.3,
                            beyond_noise=["protect (×1.10)"])]}
    t = compare([one, other], ["a", "b"])
    assert "| S | R / G | PASS, PASS (×1.05, 85 %) | FAIL, PASS (×1.30, 85 %) | 1 of 2 | — |" in t, t
    assert "in every run: 0 of 1; in some runs only: 1" in t, t
    t = compare([other, other], ["a", "b"])
    assert "| none | every run |" in t and "beyond the noise in every run: 1." in t, t
    print("matrix analysis self-test: ok")


if __name__ == "__main__":
    main(sys.argv[1:])
