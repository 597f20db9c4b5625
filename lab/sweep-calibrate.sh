#!/usr/bin/env bash
# Calibrate sweep on this machine: with the reference flow the same in both modes (aa), how
# often the two identical N = 1 points (one process of one thread, twice) agree — their
# ratio's interval holds 1 — and, with the flow made N % costlier per message in processes
# mode only (procN: a wrapper gives sample-flow --extra-cpu-us when OEMPUTX_SWEEP_MODE is
# processes, sized from the flow's measured cost), how often every N is called "processes
# cost more". Cases interleaved; each sweep of --tasks 1,2,4 at most SWEEP_MAX_TIME.
#
#   bash lab/sweep-calibrate.sh [RUNS] [CASES]        (defaults: 20, "aa proc10")
#   SWEEP_COUNT (2000 a round), SWEEP_TASKS (1,2,4), SWEEP_MAX_TIME (10m)
#
# Writes each sweep's JSON and text and a TSV line per sweep to $LAB_OUT/sweep-<date>/
# (target/lab by default; copy runs.tsv and settings.txt into lab/calibration/ to keep
# them). Runs copies of the release binaries taken at the start (OEMPUTX_BIN: from where).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
cases=${2:-aa proc10}
src=${OEMPUTX_BIN:-target/release}
url=${OEMPUTX_TEST_AMQP:-amqp://guest:guest@127.0.0.1:5672/%2f}
db=${OEMPUTX_TEST_PG:-postgres://postgres:postgres@127.0.0.1:5432/postgres}
count=${SWEEP_COUNT:-2000}
tasks=${SWEEP_TASKS:-1,2,4}
max_time=${SWEEP_MAX_TIME:-10m}
out=${LAB_OUT:-target/lab}/sweep-$(date -u +%Y%m%d-%H%M)
mkdir -p "$out/bin"
cp "$src/oemputx" "$src/sample-flow" "$out/bin/"
bin=$(cd "$out/bin" && pwd)
tsv=$out/runs.tsv
# The flow, with a burn in processes mode only (EXTRA µs a message; 0 for A/A).
cat >"$bin/flow.sh" <<EOF
#!/bin/sh
if [ "\$OEMPUTX_SWEEP_MODE" = processes ] && [ "\${EXTRA:-0}" != 0 ]; then
  exec "$bin/sample-flow" --extra-cpu-us "\$EXTRA" "\$@"
fi
exec "$bin/sample-flow" "\$@"
EOF
chmod +x "$bin/flow.sh"
cleanup() { psql "$db" -qc "DROP TABLE IF EXISTS calib_sweep" >/dev/null 2>&1 || true; }
trap cleanup EXIT
flow="$bin/flow.sh --db $db --db-async-commit --db-table calib_sweep"
run_opts=(--qmgr "$url" --count "$count" --warmup 100 --group QMGR=@rabbitmq --group DB=@postgresql)

# The flow's cost per message at N = 1, from a short sweep: it sizes the burn.
EXTRA=0 "$bin/oemputx" sweep --tasks 1 --flow-cmd "$flow" --max-time 60s --no-save \
  --export-json "$out/sizing.json" "${run_opts[@]}" >/dev/null 2>&1 || true
flow_us=$(python3 -c "
import json; j=json.load(open('$out/sizing.json'))
p=j['points'][0]; print([g for g in p['groups'] if g['name']=='FLOW'][0]['us_per_tran']['median'])")
echo "FLOW cost at N = 1: $flow_us us/tran; --tasks $tasks, rounds of $count, at most $max_time a sweep; commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" | tee "$out/settings.txt"

printf 'case\trun\textra_cpu_us\texit\tseconds\tblocks\tended\tflow_ratio_by_n\tfindings_by_n\tn1_holds_1\tadjusted_by_n\n' >"$tsv"
for i in $(seq "$runs"); do
  for c in $cases; do
    pct=${c#proc}; [ "$c" = aa ] && pct=0
    extra=$(python3 -c "print(round($flow_us * $pct / 100, 2))")
    json="$out/$c-$i.json"
    start=$(date +%s)
    code=0
    EXTRA=$extra "$bin/oemputx" sweep --tasks "$tasks" --flow-cmd "$flow" --max-time "$max_time" \
      --no-save --export-json "$json" "${run_opts[@]}" >"$out/$c-$i.txt" 2>&1 || code=$?
    secs=$(( $(date +%s) - start ))
    summary=$(python3 -c "
import json; j=json.load(open('$json'))
f=[r for r in j['ratios'] if r['metric']=='FLOW']
fmt=lambda r: 'N%d=%.3f[%.3f,%.3f]' % (r['tasks'], r['ratio'] or 0, r['low'] or 0, r['high'] or 0)
n1=[r for r in f if r['tasks']==1][0]
holds = (n1['low'] or 9) <= 1 <= (n1['high'] or 0)
print('\t'.join([str(j['run_shape']['blocks']), j['run_shape']['ended'], ' '.join(fmt(r) for r in f),
  ' '.join('N%d=%s' % (r['tasks'], r['finding']) for r in f), str(holds),
  ' '.join('N%d=%s' % (r['tasks'], r.get('adjusted_by') or 'plain') for r in f)]))" 2>/dev/null || echo "0	error	-	-	-	-")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$i" "$extra" "$code" "$secs" "$summary" | tee -a "$tsv"
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
    holds = sum(r['n1_holds_1'] == 'True' for r in rs)
    called = sum(all(x.endswith('=worse') for x in r['findings_by_n'].split()) for r in rs)
    print(f"{case}: {len(rs)} sweeps; N=1 interval holds 1 in {holds}; every N called 'processes cost more' in {called}; "
          f"seconds median {secs[len(secs)//2]}, max {secs[-1]}")
PY
