#!/usr/bin/env python3
"""Judge the raw counts of an instruction-gate calibration (ci/calibration/instr-*/) by the
rule src/commands/gate_instr.rs applies, so that counts made by an earlier build can be read
with the current rule (and the rules compared). Per gate: each side's steady cost is the
smallest over its runs of (I(N) - I(1)) / (N - 1), confirmed when a second run lies within
half the tolerance; regression above 1 + tolerance, improvement below 1 - tolerance.

    python3 lab/gate-instr-rejudge.py DIR [TOLERANCE]      (default 0.01)

Also prints what (I(2N) - I(N)) / N on the smallest counts (the first rule) said, and the
error of each against the change the calibration made (0 for aa, --extra-work for plusN).
"""
import csv, glob, json, os, statistics, sys

d = sys.argv[1]
tol = float(sys.argv[2]) if len(sys.argv) > 2 else 0.01
settings = open(os.path.join(d, 'settings.txt')).read()
per_round = float(settings.split('one --extra-work round: ')[1].split()[0])
rows = {r['case'] + '-' + r['run']: r for r in csv.DictReader(open(os.path.join(d, 'runs.tsv')), delimiter='\t')}


def steady(runs, n):
    return [(r[1] - r[0]) / (n - 1) for r in runs]


def verdict(a, b, conf):
    if not conf:
        return 'inconclusive'
    q = b / a
    return 'regression' if q > 1 + tol else 'improvement' if q < 1 - tol else 'pass'


tally = {}
print('gate\texpected\tratio\terror\tverdict\tcold_ratio\tcold_verdict\toverall\tfirst_rule_ratio\tfirst_rule_error')
for f in sorted(glob.glob(os.path.join(d, '*-*.json'))):
    name = os.path.basename(f)[:-5]
    if name not in rows:
        continue
    c = json.load(open(f))['instruction_counts']
    n = c['messages'][1]
    sa, sb = steady(c['a'], n), steady(c['b'], n)
    a, b = min(sa), min(sb)
    conf = all(sum(x <= min(s) * (1 + tol / 2) for x in s) >= 2 for s in (sa, sb))
    extra = int(rows[name]['extra_work'])
    expected = (a + extra * per_round) / a
    old_a = (min(r[2] for r in c['a']) - min(r[1] for r in c['a'])) / n
    old_b = (min(r[2] for r in c['b']) - min(r[1] for r in c['b'])) / n
    v = verdict(a, b, conf)
    ca, cb = [r[0] for r in c['a']], [r[0] for r in c['b']]
    cold_conf = all(sum(x <= min(s) * (1 + tol / 2) for x in s) >= 2 for s in (ca, cb))
    cv = verdict(min(ca), min(cb), cold_conf)
    vs = {v, cv}
    overall = ('regression' if 'regression' in vs else 'inconclusive' if 'inconclusive' in vs
               else 'improvement' if 'improvement' in vs else 'pass')
    case = name.split('-')[0]
    tally.setdefault(case, []).append(overall)
    print(f'{name}\t{expected:.4f}\t{b / a:.4f}\t{100 * (b / a - expected):+.2f}%\t{v}\t{min(cb) / min(ca):.4f}\t{cv}\t{overall}\t{old_b / old_a:.4f}\t{100 * (old_b / old_a - expected):+.2f}%')
for case, vs in tally.items():
    print(f'{case}: {len(vs)} gates, overall verdicts: ' + ', '.join(f'{v} {vs.count(v)}' for v in sorted(set(vs))))
