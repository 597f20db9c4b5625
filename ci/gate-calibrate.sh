#!/usr/bin/env bash
# Measure the stored-baseline gate's false alarm rate and power on this machine (the A/B
# gate has ci/gate-ab-calibrate.sh).
#
#   bash ci/gate-calibrate.sh [A/A RUNS] [POWER RUNS]      (defaults 20 and 10)
#
# A/A: the same build and settings as the baseline, gated again and again; every regression
# verdict is a false alarm. Power: the flow made 10% and 25% more expensive per message with
# --extra-cpu-us (sized from the baseline's FLOW figure), and how often the gate says
# regression. Writes reports/gate-calibration.tsv (one line per gate run) and prints a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
aa=${1:-20}
power=${2:-10}
out=reports/gate-calibration
mkdir -p "$out"
tsv=reports/gate-calibration.tsv
flow_us=$(python3 -c "
import json,statistics
j=json.load(open('${GATE_BASELINE:-ci/baseline.json}'))
print(statistics.median(g['total_us_per_tran'] for r in j['rounds'] for g in r['groups'] if g['name']=='FLOW'))")
echo "baseline FLOW median: $flow_us us/tran" >&2
printf 'case\trun\textra_cpu_us\tverdict\tmetric_verdicts\n' >"$tsv"
one() { # case run extra
  local json="$out/$1-$2.json" code=0
  GATE_EXTRA_CPU_US=$3 bash ci/gate.sh --stored --export-json "$json" >/dev/null 2>&1 || code=$?
  local summary
  summary=$(python3 -c "
import json; j=json.load(open('$json'))
print(j['verdict'] + '\t' + ' '.join(d['metric']+'='+d['verdict']+'(' + format(100*(d['ratio']-1),'+.1f') + '%)' for d in j['decisions']))")
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$summary" | tee -a "$tsv" >&2
  [ "$code" -eq 0 ] || [ "$code" -eq 3 ] || echo "gate exited $code" >&2
}
for i in $(seq "$aa"); do one aa "$i" 0; done
for pct in 10 25; do
  extra=$(python3 -c "print(round($flow_us * $pct / 100))")
  for i in $(seq "$power"); do one "plus$pct" "$i" "$extra"; done
done
python3 - "$tsv" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
by = collections.defaultdict(collections.Counter)
for r in rows:
    by[r['case']][r['verdict']] += 1
for case, c in by.items():
    n = sum(c.values())
    print(f"{case}: {n} runs: " + ", ".join(f"{v} {k}" for k, v in sorted(c.items())))
PY
