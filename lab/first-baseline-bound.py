#!/usr/bin/env python3
"""What the first-baseline rule (src/gate/first.rs) is built on: for every run of one or more
stored-gate calibration batches (lab/gate-stored-calibrate.sh with STORED_HISTORY=1), each
gated metric's change from the one-run baseline beyond the tolerance, in units of the rounds'
spread s (the larger of the two runs' robust standard deviations of log round figures, floored
at ln 1.10), the largest over the metrics — the figure the rule compares with K.

    python3 lab/first-baseline-bound.py [--tolerance 0.05] target/lab/stored-A target/lab/stored-B ...

Prints one line per run (batch, same or across host states, case, z, the metric, its change d
and s, both in % on the log scale), then per (hosts, case) the largest z of the unchanged
runs (aa) and the smallest of the changed ones.
"""
import glob
import json
import math
import os
import statistics
import sys


def load(path):
    j = json.load(open(path))
    per = {}
    for r in j["rounds"]:
        for g in r["groups"]:
            per.setdefault(g["name"], []).append(g["total_us_per_tran"])
    per["corrected"] = [r["corrected_us_per_tran"] for r in j["rounds"]]
    state = ((j.get("accounting") or {}).get("host_load") or {}).get("state")
    out = {}
    for name, values in per.items():
        logs = [math.log(x) for x in values]
        m = statistics.median(logs)
        out[name] = (m, 1.4826 * statistics.median([abs(x - m) for x in logs]))
    return out, state


def main(args):
    tol = 0.05
    if args[:1] == ["--tolerance"]:
        tol, args = float(args[1]), args[2:]
    tau, floor = math.log(1 + tol), math.log(1.10)
    extremes = {}
    for folder in args:
        base, base_state = load(sorted(glob.glob(os.path.join(folder, "baseline-report-*.json")))[-1])
        for path in sorted(glob.glob(os.path.join(folder, "*-*-report.json"))):
            name = os.path.basename(path)
            if name.startswith("baseline"):
                continue
            case = name.split("-")[0]
            cur, state = load(path)
            hosts = "same" if state is not None and state == base_state else "across"
            best = None
            for metric, (m, s) in cur.items():
                if metric == "DRIVER" or metric not in base:
                    continue
                d = m - base[metric][0]
                spread = max(s, base[metric][1])
                z = (d - tau) / max(spread, floor)
                if best is None or z > best[0]:
                    best = (z, metric, d, spread)
            z, metric, d, spread = best
            print(f"{os.path.basename(folder)}\t{hosts}\t{name[:-12]}\t{z:+.2f}\t{metric}\td={100 * d:+.0f}\ts={100 * spread:.0f}")
            key = (hosts, case)
            lo, hi = extremes.get(key, (math.inf, -math.inf))
            extremes[key] = (min(lo, z), max(hi, z))
    for (hosts, case), (lo, hi) in sorted(extremes.items()):
        print(f"hosts {hosts}, {case}: z from {lo:+.2f} to {hi:+.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
