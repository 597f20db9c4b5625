#!/usr/bin/env bash
# Calibrate the instruction gate (oemputx gate --instructions) on this machine: the A/A
# spread of the steady instructions per message, and how often a +2 % change is caught.
# Both flows are the reference flow (sample-flow with PostgreSQL, one thread); in "plus2"
# flow B does --extra-work rounds sized to 2 % of flow A's steady count (measured first).
# Cases are interleaved.
#
#   bash lab/gate-instr-calibrate.sh [RUNS] [CASES]      (defaults: 10, "aa plus2")
#   INSTR_MODE=stored bash lab/gate-instr-calibrate.sh 20
#
# INSTR_MODE=stored calibrates the stored instruction baseline instead: flow A's counts are
# saved once (gate --instructions --save-baseline), then, once the baseline is INSTR_AGE
# seconds old (1800: the issue asks for baselines made 30 minutes or more before), each
# gate counts flow B alone against it (--baseline), with the same command line as A's in
# A/A.
#
# Writes one JSON per gate (verdicts and every count) and a TSV line per gate to
# $LAB_OUT/instr-<date>/ (target/lab by default; copy the summary into lab/calibration/ to keep it), and prints the summary. `oemputx gate --rejudge` applies the
# gate's current rule to the counts of an earlier calibration. Uses the release binaries
# (cargo build --release --workspace --bins); OEMPUTX_BIN overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
cases=${2:-aa plus2}
src=${OEMPUTX_BIN:-target/release}
url=${OEMPUTX_TEST_AMQP:-amqp://guest:guest@127.0.0.1:5672/%2f}
db=${OEMPUTX_TEST_PG:-postgres://postgres:postgres@127.0.0.1:5432/postgres}
count=${GATE_COUNT:-1000}
out=${LAB_OUT:-target/lab}/instr-$(date -u +%Y%m%d-%H%M)
mkdir -p "$out/bin"
# Copies of the binaries, taken now: a rebuild meanwhile changes nothing.
cp "$src/oemputx" "$src/sample-flow" "$out/bin/"
bin=$out/bin
tsv=$out/runs.tsv
flow="$bin/sample-flow --db $db --db-async-commit --threads 1"
run_opts=(--qmgr "$url" --count "$count" --tasks 1)
cleanup() {
  for t in calib_ia calib_ib; do psql "$db" -qc "DROP TABLE IF EXISTS $t" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

steady() { # JSON file, side (a|b) -> steady instructions/msg as the gate computes it
  python3 - "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
c = j['instruction_counts']; n = c['messages'][1]
print(min((r[1] - r[0]) / (n - 1) for r in c[sys.argv[2]]))
PY
}

# Sizing: instructions per --extra-work round, from one gate with a large known amount.
probe=20000
"$bin/oemputx" gate --instructions --flow-a "$flow --db-table calib_ia" \
  --flow-b "$flow --db-table calib_ib --extra-work $probe" \
  --export-json "$out/sizing.json" -- "${run_opts[@]}" >"$out/sizing.txt" 2>&1 || true
a=$(steady "$out/sizing.json" a)
b=$(steady "$out/sizing.json" b)
per_round=$(python3 -c "print(($b - $a) / $probe)")
echo "flow A: $a instructions/msg; one --extra-work round: $per_round instructions; mode ${INSTR_MODE:-ab}; commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" | tee "$out/settings.txt"

mode=${INSTR_MODE:-ab}
if [ "$mode" = stored ]; then
  "$bin/oemputx" gate --instructions --flow-a "$flow --db-table calib_ia" \
    --save-baseline "$out/instr-baseline.json" -- "${run_opts[@]}" >"$out/baseline.txt" 2>&1
  saved=$(date +%s)
  age=${INSTR_AGE:-1800}
  echo "baseline saved $(date -u +%H:%M:%S); gates from $(date -u -d @$((saved + age)) +%H:%M:%S) (age ${age}s)" | tee -a "$out/settings.txt"
  while [ $(( $(date +%s) - saved )) -lt "$age" ]; do sleep 10; done
fi

printf 'case\trun\textra_work\texpected_change\texit\tverdict\tseconds\tsteady_a\tsteady_b\tratio\n' >"$tsv"
for i in $(seq "$runs"); do
  for c in $cases; do
    pct=${c#plus}; [ "$c" = aa ] && pct=0
    extra=$(python3 -c "print(round($a * $pct / 100 / $per_round))")
    expected=$(python3 -c "print('%+.2f%%' % (100 * $extra * $per_round / $a))")
    # The same command line on both sides under A/A: an option more costs cold start.
    work=""; [ "$extra" = 0 ] || work=" --extra-work $extra"
    json="$out/$c-$i.json"
    start=$(date +%s)
    code=0
    if [ "$mode" = stored ]; then
      # One flow at a time: B may use A's table, and so has A's command line.
      "$bin/oemputx" gate --instructions --baseline "$out/instr-baseline.json" \
        --flow-b "$flow --db-table calib_ia$work" \
        --export-json "$json" -- "${run_opts[@]}" >"$out/$c-$i.txt" 2>&1 || code=$?
    else
      "$bin/oemputx" gate --instructions --flow-a "$flow --db-table calib_ia" \
        --flow-b "$flow --db-table calib_ib$work" \
        --export-json "$json" -- "${run_opts[@]}" >"$out/$c-$i.txt" 2>&1 || code=$?
    fi
    secs=$(( $(date +%s) - start ))
    summary=$(python3 - "$json" <<'PY' 2>/dev/null || echo "error	-	-	-"
import json, sys
j = json.load(open(sys.argv[1]))
d = [d for d in j['decisions'] if d['metric'] == 'instructions/msg'][0]
print('\t'.join([j['verdict'], '%.1f' % d['base_median'], '%.1f' % d['current_median'], '%.5f' % d['ratio']]))
PY
)
    v=${summary%%	*}; rest=${summary#*	}
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$i" "$extra" "$expected" "$code" "$v" "$secs" "$rest" | tee -a "$tsv"
  done
done

python3 - "$tsv" <<'PY'
import csv, sys, collections, statistics as st
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
by = collections.defaultdict(list)
for r in rows:
    by[r['case']].append(r)
for case, rs in by.items():
    v = collections.Counter(r['verdict'] for r in rs)
    secs = sorted(int(r['seconds']) for r in rs)
    ratios = [float(r['ratio']) for r in rs if r['ratio'] not in ('-', '')]
    a = [float(r['steady_a']) for r in rs if r['steady_a'] not in ('-', '')]
    print(f"{case}: {len(rs)} runs, verdicts {dict(v)}, seconds median {st.median(secs)} max {secs[-1]}; "
          f"B/A ratio {min(ratios):.4f}..{max(ratios):.4f} (median {st.median(ratios):.4f}); "
          f"A's steady count {min(a):.0f}..{max(a):.0f} ({100 * (max(a) / min(a) - 1):.2f}% range)")
PY
