#!/usr/bin/env bash
# Calibrate the A/B gate on this machine: how often it catches a known change, and how often
# it cries wolf. Both flows are the reference flow (sample-flow with PostgreSQL); in the
# "plusN" cases flow B burns N % more CPU per message than flow A's measured FLOW cost
# (--extra-cpu-us, to 0.01 µs; the cost is measured at the start and then taken from flow
# A's cost in each run for the change after it), in "aa" both are the same. Cases are interleaved so that the machine's
# mood over the hours falls on all of them alike.
#
#   bash lab/gate-ab-calibrate.sh [RUNS] [CASES]        (defaults: 10, "aa plus5 plus2 plus10")
#   GATE_TOLERANCE (2.5%), GATE_COUNT (4000 a round), GATE_TASKS (2), GATE_MAX_TIME (5m),
#   GATE_CONTROL (DRIVER; none to judge the pairs as measured)
#
# Writes one JSON per gate run (the verdicts and every round's figures) and a TSV line per
# run to $LAB_OUT/ab-<date>/ (target/lab by default; copy the summary into lab/calibration/ to keep it), and prints the summary at the end. Uses the release
# binaries (cargo build --release --workspace --bins); OEMPUTX_BIN overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
cases=${2:-aa plus5 plus2 plus10}
bin=${OEMPUTX_BIN:-target/release}
url=${OEMPUTX_TEST_AMQP:-amqp://guest:guest@127.0.0.1:5672/%2f}
db=${OEMPUTX_TEST_PG:-postgres://postgres:postgres@127.0.0.1:5432/postgres}
tolerance=${GATE_TOLERANCE:-2.5%}
max_time=${GATE_MAX_TIME:-5m}
count=${GATE_COUNT:-4000}
tasks=${GATE_TASKS:-2}
out=${LAB_OUT:-target/lab}/ab-$(date -u +%Y%m%d-%H%M)
mkdir -p "$out"
tsv=$out/runs.tsv
flow="$bin/sample-flow --db $db --db-async-commit --threads 2"
run_opts=(--qmgr "$url" --count "$count" --warmup 100 --tasks "$tasks"
  --group QMGR=@rabbitmq --group DB=@postgresql)

# Flow A's FLOW cost per message, from three rounds, sizes the controlled changes.
queue="oemputx.calibrate.$$"
"$bin/sample-flow" --url "$url" --input-queue "$queue" --db "$db" --db-table calib_size \
  --db-async-commit --threads 2 2>/dev/null &
sizer=$!
cleanup() {
  kill "$sizer" 2>/dev/null || true
  for t in calib_size calib_a calib_b; do psql "$db" -qc "DROP TABLE IF EXISTS $t" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
sleep 1
# A warm flow: the first thousands of messages of a fresh one (cold caches, a new table)
# cost more, and sized a "+5 %" to +8 % once.
sizing=(--qmgr "$url" --count "$count" --warmup 4000 --tasks 2 --group QMGR=@rabbitmq --group DB=@postgresql)
flow_us=$("$bin/oemputx" "${sizing[@]}" --request-queue "$queue" --rounds 3 \
  --group "FLOW=pid:$sizer" --quiet --no-save --export-json - |
  python3 -c "import json,sys; j=json.load(sys.stdin); print([g for g in j['groups'] if g['name']=='FLOW'][0]['total_us_per_tran'])")
kill "$sizer"; wait "$sizer" 2>/dev/null || true
command -v rabbitmqctl >/dev/null && rabbitmqctl -q delete_queue "$queue" >/dev/null 2>&1 || true
echo "flow A's FLOW cost: $flow_us us/tran; tolerance $tolerance, at most $max_time per gate; rounds of $count, $tasks tasks; control ${GATE_CONTROL:-DRIVER}; commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" | tee "$out/settings.txt"

printf 'case\trun\textra_cpu_us\texit\tverdict\tseconds\tpairs\tmetric_verdicts\n' >"$tsv"
for i in $(seq "$runs"); do
  for c in $cases; do
    pct=${c#plus}; [ "$c" = aa ] && pct=0
    extra=$(python3 -c "print(round($flow_us * $pct / 100, 2))")
    json="$out/$c-$i.json"
    start=$(date +%s)
    code=0
    "$bin/oemputx" gate --tolerance "$tolerance" --max-time "$max_time" --control "${GATE_CONTROL:-DRIVER}" \
      --flow-a "$flow --db-table calib_a" \
      --flow-b "$flow --db-table calib_b --extra-cpu-us $extra" \
      --export-json "$json" -- "${run_opts[@]}" >"$out/$c-$i.txt" 2>&1 || code=$?
    secs=$(( $(date +%s) - start ))
    summary=$(python3 -c "
import json; j=json.load(open('$json'))
pairs=len(j['ab_rounds']['a_first'])
adj=lambda d: (',b'+format(d['adjusted_for']['slope'],'.2f')) if d.get('adjusted_for') else ''
print(j['verdict'] + '\t$secs\t' + str(pairs) + '\t' + ' '.join(d['metric']+'='+d['verdict']+'('+format(100*(d['ratio']-1),'+.1f')+'%'+adj(d)+')' for d in j['decisions']))" 2>/dev/null || echo "error	$secs	0	-")
    printf '%s\t%s\t%s\t%s\t%s\n' "$c" "$i" "$extra" "$code" "$summary" | tee -a "$tsv"
    # The flow's cost drifts with the machine over the hours (88 to 107 µs/tran within one
    # batch here): the next change is sized from what flow A (unchanged in every case)
    # cost in this run.
    flow_us=$(python3 -c "
import json; j=json.load(open('$json'))
print([d for d in j['decisions'] if d['metric']=='FLOW'][0]['base_median'])" 2>/dev/null || echo "$flow_us")
  done
done

python3 - "$tsv" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
by = collections.defaultdict(list)
for r in rows:
    by[r['case']].append(r)
for case, rs in by.items():
    v = collections.Counter(r['verdict'] for r in rs)
    secs = sorted(int(r['seconds']) for r in rs)
    print(f"{case}: {len(rs)} runs: " + ", ".join(f"{k} {n}" for k, n in sorted(v.items()))
          + f"; seconds median {secs[len(secs)//2]}, max {secs[-1]}")
PY
