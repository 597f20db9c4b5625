#!/usr/bin/env bash
# Calibrate the A/B gate with a hold-out-style flow, quiet and under load: the C responder of
# lab/holdout/burn_responder.c (librabbitmq, not oemputx's client) burning a fixed CPU per
# message. In "aa" both sides burn the same; in "plus5" side B costs 5 % more FLOW per
# message than side A. Every responder spins at one speed measured before the load starts
# (--iterations-per-us), so its work per message is fixed. A µs more of --a-us still does not
# cost exactly a µs more of measured FLOW beside busy loops (the spin runs slower there), so
# the change is sized from what it costs: a sizing run measures FLOW at --a-us BURN and BURN+20 (µs of FLOW per nominal
# µs), and every "plus" gate after it adds its own measure (B's median less A's, per nominal
# µs); each gate is sized from the median of those so far and from A's FLOW median in the
# gate before. The TSV keeps each gate's realized change (B's median over A's).
# With LOAD=N, N busy loops run beside every gate (four on this 2-CPU VM is "load 4").
#
#   bash lab/gate-ab-load.sh [RUNS] [CASES]          (defaults: 10, "aa plus5")
#   LOAD (0), GATE_TOLERANCE (2.5%), GATE_MAX_TIME (5m), GATE_COUNT (2000 a round),
#   BURN_US (100: --a-us; --b-us 0), GATE_CONTROL (DRIVER)
#
# Writes each gate's JSON and text and a TSV line per gate to $LAB_OUT/ab-load<N>-<date>/
# (target/lab by default; copy runs.tsv and settings.txt into lab/calibration/ to keep them)
# and prints the summary: exit codes by case, seconds (median, max), and for A/A the spread
# of the estimates and how many intervals excluded no change. Uses the release binaries
# (cargo build --release --workspace --bins); OEMPUTX_BIN overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
cases=${2:-aa plus5}
load=${LOAD:-0}
bin=${OEMPUTX_BIN:-target/release}
url=${OEMPUTX_TEST_AMQP:-amqp://guest:guest@127.0.0.1:5672/%2f}
tolerance=${GATE_TOLERANCE:-2.5%}
max_time=${GATE_MAX_TIME:-5m}
count=${GATE_COUNT:-2000}
burn=${BURN_US:-100}
out=${LAB_OUT:-target/lab}/ab-load$load-$(date -u +%Y%m%d-%H%M)
mkdir -p "$out"
tsv=$out/runs.tsv

responder=$out/burn_responder
gcc -O2 -g -fno-omit-frame-pointer -o "$responder" lab/holdout/burn_responder.c -lrabbitmq
# One spin speed for every responder process, measured before any load starts: each
# process measuring its own at its start made its work per message differ by up to a
# fifth beside busy loops, and a "+5 %" read +3.6 % in one gate and +9.5 % in another.
speed=${BURN_SPEED:-$("$responder" --calibrate 25)}
burn_flags="--b-us 0 --jitter 0.1 --iterations-per-us $speed"

loops=()
sizer=
cleanup() {
  [ -n "$sizer" ] && kill "$sizer" 2>/dev/null || true
  for p in "${loops[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
for _ in $(seq "$load"); do
  sh -c 'while :; do :; done' &
  loops+=($!)
done

run_opts=(--qmgr "$url" --count "$count" --warmup 200 --tasks 2)
# FLOW per message at a given --a-us, from SIZING_ROUNDS rounds (9) on a fresh responder:
# three rounds measured the cost of a µs of burn at 0.48 on a quiet host once, where the
# gates then measured about 1, and the first "+5 %" came out +10 %.
flow_at() {
  local queue="oemputx.calibrate.load.$$.${1%.*}"
  "$responder" --url "${url%/%2f}" --input-queue "$queue" --a-us "$1" $burn_flags >/dev/null 2>&1 &
  sizer=$!
  sleep 1
  "$bin/oemputx" "${run_opts[@]}" --request-queue "$queue" --rounds "${SIZING_ROUNDS:-9}" \
    --group "FLOW=pid:$sizer" --quiet --no-save --export-json - |
    python3 -c "import json,sys; j=json.load(sys.stdin); print([g for g in j['groups'] if g['name']=='FLOW'][0]['total_us_per_tran'])"
  kill "$sizer"; wait "$sizer" 2>/dev/null || true; sizer=
  command -v rabbitmqctl >/dev/null && rabbitmqctl -q delete_queue "$queue" >/dev/null 2>&1 || true
}
flow_us=$(flow_at "$burn")
flow_more=$(flow_at "$(python3 -c "print($burn + 20)")")
yields=$out/yields
python3 -c "print(($flow_more - $flow_us) / 20)" >"$yields"
echo "hold-out flow: burn_responder --a-us $burn $burn_flags; side A's FLOW cost $flow_us us/tran, $(cat "$yields") us of FLOW per nominal us more; load $load busy loops; tolerance $tolerance, at most $max_time per gate; rounds of $count, 2 tasks; control ${GATE_CONTROL:-DRIVER}; commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" | tee "$out/settings.txt"

printf 'case\trun\textra_burn_us\texit\tverdict\tseconds\tblocks\tstopped\tFLOW_pct\tFLOW_low\tFLOW_high\tcaptured_pct\trealized_pct\n' >"$tsv"
for i in $(seq "$runs"); do
  for c in $cases; do
    pct=${c#plus}; [ "$c" = aa ] && pct=0
    extra=$(python3 -c "
import statistics
y = [float(l) for l in open('$yields') if l.strip()]
k = min(max(statistics.median(y), 0.5), 1.5)
print(round($flow_us * $pct / 100 / k, 2))")
    json="$out/$c-$i.json"
    start=$(date +%s)
    code=0
    "$bin/oemputx" gate --tolerance "$tolerance" --max-time "$max_time" --control "${GATE_CONTROL:-DRIVER}" \
      --flow-a "$responder --a-us $burn $burn_flags" \
      --flow-b "$responder --a-us $(python3 -c "print($burn + $extra)") $burn_flags" \
      --export-json "$json" -- "${run_opts[@]}" >"$out/$c-$i.txt" 2>&1 || code=$?
    secs=$(( $(date +%s) - start ))
    summary=$(python3 - "$json" "$secs" <<'PY' 2>/dev/null || echo "error	$secs	0	-	-	-	-	-"
import json, sys
j = json.load(open(sys.argv[1]))
d = {x['metric']: x for x in j['decisions']}
f, c = d['FLOW'], d.get('captured', {})
q = j.get('sequential', {})
pct = lambda r: format(100 * (r - 1), '+.2f')
print('\t'.join([j['verdict'], sys.argv[2], str(q.get('blocks', '-')), q.get('stopped', '-'),
                 pct(f['ratio']), pct(f['ci_low']), pct(f['ci_high']),
                 pct(c['ratio']) if c else '-', pct(f['current_median'] / f['base_median'])]))
PY
)
    printf '%s\t%s\t%s\t%s\t%s\n' "$c" "$i" "$extra" "$code" "$summary" | tee -a "$tsv"
    # The responder's cost drifts with the machine: the next change is sized from what side
    # A (unchanged in every case) cost in this gate.
    flow_us=$(python3 -c "
import json; j=json.load(open('$json'))
print([d for d in j['decisions'] if d['metric']=='FLOW'][0]['base_median'])" 2>/dev/null || echo "$flow_us")
    if [ "$pct" != 0 ]; then
      python3 -c "
import json; j=json.load(open('$json'))
f=[d for d in j['decisions'] if d['metric']=='FLOW'][0]
print((f['current_median'] - f['base_median']) / $extra)" >>"$yields" 2>/dev/null || true
    fi
  done
done

python3 - "$tsv" <<'PY' | tee "$out/summary.txt"
import csv, sys, collections, statistics
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
by = collections.defaultdict(list)
for r in rows:
    by[r['case']].append(r)
for case, rs in by.items():
    codes = collections.Counter(r['exit'] for r in rs)
    secs = sorted(int(r['seconds']) for r in rs)
    line = (f"{case}: {len(rs)} gates: exit " + ", ".join(f"{k}: {n}" for k, n in sorted(codes.items()))
            + f"; seconds median {secs[len(secs)//2]}, max {secs[-1]}")
    real = sorted(float(r['realized_pct']) for r in rs if r.get('realized_pct') not in (None, '-', ''))
    if real:
        line += f"; realized change (B's median over A's) {real[0]:+.1f} … {real[-1]:+.1f}%, median {real[len(real)//2]:+.1f}%"
    est = [float(r['FLOW_pct']) for r in rs if r['FLOW_pct'] not in ('-', '')]
    if est:
        excl = sum(1 for r in rs if r['FLOW_low'] not in ('-', '') and
                   (float(r['FLOW_low']) > 0 or float(r['FLOW_high']) < 0))
        sd = statistics.stdev(est) if len(est) > 1 else 0.0
        line += (f"; FLOW estimates mean {statistics.mean(est):+.2f}%, sd {sd:.2f}%, "
                 f"median {statistics.median(est):+.2f}%; intervals excluding 0: {excl} of {len(est)}")
    print(line)
PY
