#!/usr/bin/env python3
"""Does the driver's own CPU per message carry the host's drift between a one-run baseline and a
later run? For every run of one or more stored-gate calibration batches
(lab/gate-stored-calibrate.sh with STORED_HISTORY=1): each gated group's change from the
baseline (log median of the round figures), the driver's change (DRIVER: oemputx itself, the
same code on both sides), and the change of each group's round figures divided by the driver's
in the same round (the control the A/B gate uses), each with the rounds' robust spread.

    python3 lab/first-baseline-control.py [--tolerance 0.05] target/lab/stored-A ...

Prints one line per run, then per (case, rule) the largest z of the unchanged runs (aa) and the
smallest of the +50 % ones: z = (change - tau) / max(s, ln 1.10), the first-baseline rule's
scale (src/gate/first.rs), for the raw figures and for the driver-adjusted ones.
"""
import glob
import json
import math
import os
import statistics
import sys

GATED = ("FLOW", "QMGR", "DB", "corrected")


def robust(logs):
    m = statistics.median(logs)
    return m, 1.4826 * statistics.median([abs(x - m) for x in logs])


def load(path):
    """Per metric: (median, spread) of the log round figures, raw and over the driver's."""
    j = json.load(open(path))
    raw, adj = {}, {}
    for r in j["rounds"]:
        groups = {g["name"]: g["total_us_per_tran"] for g in r["groups"]}
        groups["corrected"] = r.get("corrected_us_per_tran")
        driver = groups.get("DRIVER")
        for name, v in groups.items():
            if not v or v <= 0:
                continue
            raw.setdefault(name, []).append(math.log(v))
            if driver and driver > 0 and name != "DRIVER":
                adj.setdefault(name, []).append(math.log(v) - math.log(driver))
    return ({k: robust(v) for k, v in raw.items()}, {k: robust(v) for k, v in adj.items()})


def main(args):
    tol = 0.05
    if args[:1] == ["--tolerance"]:
        tol, args = float(args[1]), args[2:]
    tau, floor = math.log(1 + tol), math.log(1.10)
    extremes = {}
    for folder in args:
        base_raw, base_adj = load(sorted(glob.glob(os.path.join(folder, "baseline-report-*.json")))[-1])
        for path in sorted(glob.glob(os.path.join(folder, "*-*-report.json"))):
            name = os.path.basename(path)
            if name.startswith("baseline"):
                continue
            case = name.split("-")[0]
            raw, adj = load(path)
            cells = []
            for rule, cur, base in (("raw", raw, base_raw), ("driver", adj, base_adj)):
                best = None
                for metric in GATED:
                    if metric not in cur or metric not in base:
                        continue
                    d = cur[metric][0] - base[metric][0]
                    s = max(cur[metric][1], base[metric][1])
                    z = (d - tau) / max(s, floor)
                    if best is None or z > best[0]:
                        best = (z, metric, d)
                z, metric, d = best
                cells.append(f"{rule} z={z:+.2f} {metric} {100 * d:+.0f}%")
                key = (case, rule)
                lo, hi = extremes.get(key, (math.inf, -math.inf))
                extremes[key] = (min(lo, z), max(hi, z))
            dd = raw["DRIVER"][0] - base_raw["DRIVER"][0]
            changes = " ".join(
                f"{m}={100 * (raw[m][0] - base_raw[m][0]):+.0f}%" for m in GATED + ("DRIVER",) if m in raw and m in base_raw
            )
            print(f"{os.path.basename(folder)}\t{name[:-12]}\tDRIVER {100 * dd:+.0f}%\t{changes}\t" + "\t".join(cells))
    for (case, rule), (lo, hi) in sorted(extremes.items()):
        print(f"{case} {rule}: z from {lo:+.2f} to {hi:+.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
