#!/usr/bin/env bash
# Calibrate the stored-baseline gate on this machine, with the cases of the A/B calibration
# (lab/gate-ab-calibrate.sh): how often it cries wolf when nothing changed, and how often it
# catches a flow made 2, 5 and 10 % more expensive per message.
#
#   bash lab/gate-stored-calibrate.sh [RUNS] [CASES] [TOLERANCES]
#     defaults: 20, "aa plus5 plus10 plus20", "5% 10%"
#   GATE_COUNT (1500 messages a round), GATE_ROUNDS (10), GATE_TASKS (2); OEMPUTX_BIN
#   (target/release)
#   STORED_HISTORY (10 runs of main), STORED_GAP (180 s between them), STORED_AGE (1800 s
#   from the last of them to the first gate: the issue asks for baselines made 30 minutes
#   or more before the run). STORED_HISTORY=1 STORED_GAP=0 STORED_AGE=0 is a one-run
#   baseline (what a new user makes first).
#   LOAD_BASELINE, LOAD_RUNS (0): busy loops (`nice 0`) kept running while the baseline's
#   runs, and while the gated runs, are measured: load 4 on 2 cores is LOAD_RUNS=4.
#   FULL_CASES ("aa plus5 plus50"): the cases run in every run; the others in the first half.
#
# The baseline is main's history: STORED_HISTORY runs of the unchanged reference flow (as
# ci/gate.sh --stored runs it), each on a fresh flow, STORED_GAP apart, appended with
# --save-baseline; then each run starts a fresh flow (flow B: in plusN with --extra-cpu-us sized to N % of
# the baseline's FLOW median), measures it in rounds, and the saved report is judged
# against the baseline at every tolerance (the same rounds, so the tolerances are compared
# on equal terms). cases other than aa and plus5 run in the first half of the runs only (10
# of 20). Cases are interleaved, so the machine's drift over the batch falls on all
# of them. Writes $LAB_OUT/stored-<date>/ (target/lab by default; copy the summary into lab/calibration/ to keep it) (baseline, every run's report and verdicts,
# runs.tsv) and prints the summary.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
cases=${2:-aa plus5 plus10 plus20}
tolerances=${3:-5% 10%}
src=${OEMPUTX_BIN:-target/release}
url=${OEMPUTX_TEST_AMQP:-amqp://guest:guest@127.0.0.1:5672/%2f}
db=${OEMPUTX_TEST_PG:-postgres://postgres:postgres@127.0.0.1:5432/postgres}
count=${GATE_COUNT:-1500}
rounds=${GATE_ROUNDS:-10}
tasks=${GATE_TASKS:-2}
out=${LAB_OUT:-target/lab}/stored-$(date -u +%Y%m%d-%H%M)
mkdir -p "$out/bin"
# Copies of the binaries, taken now: a rebuild meanwhile changes nothing.
cp "$src/oemputx" "$src/sample-flow" "$out/bin/"
bin=$out/bin
tsv=$out/runs.tsv
queue="oemputx.stored-calibrate.$$"
table="calib_stored_$$"
flow=

stop_flow() {
  [ -n "$flow" ] || return 0
  kill "$flow" 2>/dev/null || true
  wait "$flow" 2>/dev/null || true
  flow=
}
cleanup() {
  unload
  stop_flow
  psql "$db" -qc "DROP TABLE IF EXISTS $table" >/dev/null 2>&1 || true
  command -v rabbitmqctl >/dev/null && rabbitmqctl -q delete_queue "$queue" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Busy loops standing for other work on a shared host; stopped by unload and on exit.
spinners=()
load() { # N
  local i
  for i in $(seq "$1"); do
    sh -c 'while :; do :; done' &
    spinners+=($!)
  done
}
unload() {
  [ "${#spinners[@]}" -gt 0 ] || return 0
  kill "${spinners[@]}" 2>/dev/null || true
  wait "${spinners[@]}" 2>/dev/null || true
  spinners=()
}

# The reference flow as ci/gate.sh --stored runs it; waits until it consumes.
start_flow() { # extra-cpu-us
  "$bin/sample-flow" --url "$url" --input-queue "$queue" --db "$db" --db-table "$table" \
    --db-async-commit --threads 2 --extra-cpu-us "$1" 2>/dev/null &
  flow=$!
  sleep 1
}

# One measured run of the flow now running, its report saved to $1.
measure() { # report.json [more oemputx options]
  local report=$1
  shift
  "$bin/oemputx" --qmgr "$url" --request-queue "$queue" --count "$count" --rounds "$rounds" \
    --warmup 100 --tasks "$tasks" --group "FLOW=pid:$flow" --group QMGR=@rabbitmq \
    --group DB=@postgresql --label gate --no-save --quiet --export-json "$report" "$@" >/dev/null
}

history=${STORED_HISTORY:-10}
gap=${STORED_GAP:-180}
age=${STORED_AGE:-1800}
full=${FULL_CASES:-aa plus5 plus50}
load "${LOAD_BASELINE:-0}"
for h in $(seq "$history"); do
  start_flow 0
  measure "$out/baseline-report-$h.json" --save-baseline "$out/baseline.json"
  stop_flow
  [ "$h" = "$history" ] || sleep "$gap"
done
unload
saved=$(date +%s)
flow_us=$(python3 -c "
import json,statistics
j=json.load(open('$out/baseline.json'))
med=[statistics.median(g['total_us_per_tran'] for r in run['rounds'] for g in r['groups'] if g['name']=='FLOW') for run in j['runs']]
print(statistics.median(med))")
echo "baseline: $history runs of main ${gap}s apart, FLOW median of medians $flow_us us/tran; first gate ${age}s after the last; rounds: $rounds of $count messages, $tasks tasks; tolerances $tolerances; commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" | tee "$out/settings.txt"
while [ $(( $(date +%s) - saved )) -lt "$age" ]; do sleep 10; done

load "${LOAD_RUNS:-0}"
echo "load: ${LOAD_BASELINE:-0} busy loops while the baseline ran, ${LOAD_RUNS:-0} while the gated runs ran" | tee -a "$out/settings.txt"
printf 'case\trun\textra_cpu_us\ttolerance\texit\tverdict\tmetric_verdicts\n' >"$tsv"
half=$(( (runs + 1) / 2 ))
for i in $(seq "$runs"); do
  for c in $cases; do
    pct=${c#plus}; [ "$c" = aa ] && pct=0
    case " $full " in *" $c "*) ;; *) [ "$i" -le "$half" ] || continue ;; esac
    extra=$(python3 -c "print(round($flow_us * $pct / 100, 2))")
    start_flow "$extra"
    measure "$out/$c-$i-report.json" || echo "run $c $i: oemputx exited $?" >&2
    stop_flow
    for t in $tolerances; do
      json="$out/$c-$i-verdict-${t%\%}.json"
      code=0
      "$bin/oemputx" gate --baseline "$out/baseline.json" --current "$out/$c-$i-report.json" \
        --tolerance "$t" --export-json "$json" >"$out/$c-$i-verdict-${t%\%}.txt" 2>&1 || code=$?
      summary=$(python3 -c "
import json; j=json.load(open('$json'))
print(j['verdict'] + '\t' + ' '.join(d['metric']+'='+d['verdict']+'(' + format(100*(d['ratio']-1),'+.1f') + '%)' for d in j['decisions']))" 2>/dev/null || echo "error	-")
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$i" "$extra" "$t" "$code" "$summary" | tee -a "$tsv"
    done
  done
done

python3 - "$tsv" <<'PY'
import csv, sys, collections, re
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
overall = collections.defaultdict(collections.Counter)
flow = collections.defaultdict(collections.Counter)
for r in rows:
    overall[(r['tolerance'], r['case'])][r['verdict']] += 1
    m = re.search(r'FLOW=(\w+)', r['metric_verdicts'])
    flow[(r['tolerance'], r['case'])][m.group(1) if m else 'missing'] += 1
for (tol, case), c in sorted(overall.items()):
    n = sum(c.values())
    f = flow[(tol, case)]
    print(f"tolerance {tol}, {case}: {n} runs: verdict " + ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
          + "; FLOW " + ", ".join(f"{k} {v}" for k, v in sorted(f.items())))
PY
