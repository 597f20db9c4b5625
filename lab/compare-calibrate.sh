#!/usr/bin/env bash
# Calibrate the live compare on this machine: how often it reports a difference between two
# identical settings (aa), and how close it measures a setting that adds a known share of CPU
# per message (plusN: flow B burns N % of the base's FLOW cost more, sample-flow
# --extra-cpu-us, sized to 0.01 µs from the base's median in the run before it). Both
# settings are the reference flow (sample-flow with PostgreSQL, --db-async-commit
# --threads 2) writing to the same table: A/A is the same setting twice (a table of its
# own per setting is a lasting difference between them that no interleaving removes);
# cases interleaved.
#
#   bash lab/compare-calibrate.sh [RUNS] [CASES]        (defaults: 20, "aa plus3")
#   COMPARE_COUNT (2000 a round), COMPARE_TASKS (2), COMPARE_MAX_TIME (5m), COMPARE_MIN_EFFECT (1%)
#
# Writes each run's JSON and text and a TSV line per run to $LAB_OUT/compare-<date>/
# (target/lab by default; copy runs.tsv and settings.txt into lab/calibration/ to keep them),
# then the summary. Runs copies of the release binaries (cargo build --release --workspace
# --bins) taken at the start, so that a rebuild meanwhile changes nothing; OEMPUTX_BIN
# overrides where they are copied from.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
cases=${2:-aa plus3}
src=${OEMPUTX_BIN:-target/release}
url=${OEMPUTX_TEST_AMQP:-amqp://guest:guest@127.0.0.1:5672/%2f}
db=${OEMPUTX_TEST_PG:-postgres://postgres:postgres@127.0.0.1:5432/postgres}
count=${COMPARE_COUNT:-2000}
tasks=${COMPARE_TASKS:-2}
max_time=${COMPARE_MAX_TIME:-5m}
min_effect=${COMPARE_MIN_EFFECT:-1%}
out=${LAB_OUT:-target/lab}/compare-$(date -u +%Y%m%d-%H%M)
mkdir -p "$out/bin"
cp "$src/oemputx" "$src/sample-flow" "$out/bin/"
bin=$out/bin
tsv=$out/runs.tsv
flow="$bin/sample-flow --db $db --db-async-commit --threads 2"
run_opts=(--qmgr "$url" --count "$count" --warmup 100 --tasks "$tasks"
  --group QMGR=@rabbitmq --group DB=@postgresql)
cleanup() {
  for t in calib_c calib_c_size; do psql "$db" -qc "DROP TABLE IF EXISTS $t" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

# The base's FLOW cost, from one short A/A compare: it sizes the first controlled change.
"$bin/oemputx" compare --flow-cmd "$flow" --setting "a=--db-table calib_c_size" \
  --setting "b=--db-table calib_c_size" --max-time 60s --export-json "$out/sizing.json" \
  -- "${run_opts[@]}" >/dev/null 2>&1 || true
flow_us=$(python3 -c "
import json; j=json.load(open('$out/sizing.json'))
i=j['metrics'].index('FLOW'); print(j['arms'][0]['figures'][i]['median'])")
echo "base FLOW cost: $flow_us us/tran; rounds of $count, $tasks tasks; at most $max_time a compare; min effect $min_effect; commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" | tee "$out/settings.txt"

printf 'case\trun\textra_cpu_us\tnominal_pct\texit\tseconds\tblocks\tended\tflow_change_pct\tflow_low_pct\tflow_high_pct\tflow_finding\tdifferences\tsized_in_run_pct\n' >"$tsv"
for i in $(seq "$runs"); do
  for c in $cases; do
    pct=${c#plus}; [ "$c" = aa ] && pct=0
    # Two decimals always: the A/A settings are byte for byte the same command ("0" against
    # "0.0" made their command lines differ), and a change's no longer than its base's.
    extra=$(python3 -c "print('%.2f' % ($flow_us * $pct / 100))")
    json="$out/$c-$i.json"
    start=$(date +%s)
    code=0
    "$bin/oemputx" compare --flow-cmd "$flow" --max-time "$max_time" --min-effect "$min_effect" \
      --setting "base=--db-table calib_c --extra-cpu-us 0.00" \
      --setting "changed=--db-table calib_c --extra-cpu-us $extra" \
      --export-json "$json" -- "${run_opts[@]}" >"$out/$c-$i.txt" 2>&1 || code=$?
    secs=$(( $(date +%s) - start ))
    summary=$(python3 -c "
import json; j=json.load(open('$json'))
ch={c['metric']: c for c in j['changes']}
f=ch['FLOW']
fmt=lambda v: '' if v is None else format(v, '.2f')
diffs=' '.join(m+'='+c['finding'] for m, c in ch.items() if c['finding'] in ('worse','better'))
# The change as sized against this run's own base (the sizing used the run before's).
base=j['arms'][0]['figures'][j['metrics'].index('FLOW')]['median']
print('\t'.join([str(j['run_shape']['blocks']), j['run_shape']['ended'], fmt(f['change_pct']), fmt(f['low_pct']), fmt(f['high_pct']), str(f['finding']), diffs or '-', fmt(100 * $extra / base)]))" 2>/dev/null || echo "0	error					-	")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$i" "$extra" "$pct" "$code" "$secs" "$summary" | tee -a "$tsv"
    # The flow's cost drifts over the hours: the next change is sized from what the
    # unchanged base cost in this run.
    flow_us=$(python3 -c "
import json; j=json.load(open('$json'))
i=j['metrics'].index('FLOW'); print(j['arms'][0]['figures'][i]['median'])" 2>/dev/null || echo "$flow_us")
  done
done

python3 - "$tsv" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
by = collections.defaultdict(list)
for r in rows:
    by[r['case']].append(r)
for case, rs in by.items():
    secs = sorted(int(r['seconds']) for r in rs)
    est = sorted(float(r['flow_change_pct']) for r in rs if r['flow_change_pct'])
    nominal = float(rs[0]['nominal_pct'])
    differences = sum(r['differences'] != '-' for r in rs)
    within = sum(abs(float(r['flow_change_pct']) - nominal) <= 1.0 for r in rs if r['flow_change_pct'])
    sized = sum(abs(float(r['flow_change_pct']) - float(r['sized_in_run_pct'])) <= 1.0
                for r in rs if r['flow_change_pct'] and r.get('sized_in_run_pct'))
    print(f"{case}: {len(rs)} runs; a difference reported (any metric) in {differences}; "
          f"FLOW estimate {est[0]:+.2f} .. {est[-1]:+.2f} % (median {est[len(est)//2]:+.2f}), "
          f"within {nominal:g} +- 1 % in {within}, within 1 % of the change as sized against the run's own base in {sized}; "
          f"seconds median {secs[len(secs)//2]}, max {secs[-1]}")
PY
