#!/usr/bin/env python3
"""Where two identical flows read apart: the anatomy of A/A gates' pairs.

    python3 lab/gate-ab-anatomy.py DIR [CASE]      (CASE: aa by default)

Reads every CASE-*.json an A/B calibration (lab/gate-ab-load.sh, lab/gate-ab-calibrate.sh)
wrote to DIR and splits each pair's ln(B / A) of FLOW (and of the driver, the control) by
what could make two identical flows differ:

- which side ran first in the pair (the ABBA order gives each half the pairs);
- the pair's place in its block (the first pair follows both flows' restart);
- the gate, as a whole (a lasting bias of one gate's processes, queues or CPU placement).

Each line gives the mean in per cent with its standard error over the pairs (over the gates
for the last). A cause shows as a mean more than two or three standard errors from zero;
what is left is the spread every estimate carries.
"""
import glob
import json
import math
import os
import statistics
import sys

PAIRS_PER_BLOCK = 4


def group(r, name):
    return next((g['total_us_per_tran'] for g in r['groups'] if g['name'] == name), None)


def line(label, xs):
    if len(xs) < 2:
        return f"{label}: {len(xs)} pairs"
    m = statistics.mean(xs)
    se = statistics.stdev(xs) / math.sqrt(len(xs))
    return f"{label}: {100 * m:+.2f}% ± {100 * se:.2f}% (n {len(xs)}, {m / se if se else 0:+.1f} SE)"


def main():
    folder = sys.argv[1]
    case = sys.argv[2] if len(sys.argv) > 2 else 'aa'
    files = sorted(glob.glob(os.path.join(folder, f'{case}-*.json')))
    if not files:
        sys.exit(f"no {case}-*.json in {folder}")
    by_first = {True: [], False: []}
    by_place = {k: [] for k in range(PAIRS_PER_BLOCK)}
    driver_first = {True: [], False: []}
    per_gate = []
    for f in files:
        j = json.load(open(f))
        rounds = j['ab_rounds']
        ds = []
        for k, (a, b, a_first) in enumerate(zip(rounds['a'], rounds['b'], rounds['a_first'])):
            fa, fb = group(a, 'FLOW'), group(b, 'FLOW')
            if not fa or not fb:
                continue
            d = math.log(fb / fa)
            ds.append(d)
            by_first[a_first].append(d)
            # The first pair is measured before the engine exists, then blocks follow.
            by_place[k % PAIRS_PER_BLOCK].append(d)
            da, db = group(a, 'DRIVER'), group(b, 'DRIVER')
            if da and db:
                driver_first[a_first].append(math.log(db / da))
        if ds:
            per_gate.append(statistics.mean(ds))
        flow = next(d for d in j['decisions'] if d['metric'] == 'FLOW')
        print(f"{os.path.basename(f)}: FLOW {100 * (flow['ratio'] - 1):+.2f}% "
              f"[{100 * (flow['ci_low'] - 1):+.2f}, {100 * (flow['ci_high'] - 1):+.2f}] "
              f"{flow['verdict']}; pairs' mean {100 * statistics.mean(ds):+.2f}%")
    print(line("FLOW, A ran first", by_first[True]))
    print(line("FLOW, B ran first", by_first[False]))
    for k, xs in by_place.items():
        print(line(f"FLOW, pair {k + 1} of its block", xs))
    print(line("DRIVER, A ran first", driver_first[True]))
    print(line("DRIVER, B ran first", driver_first[False]))
    print(line("FLOW, gates' means (over gates)", per_gate))


if __name__ == '__main__':
    main()
