#!/usr/bin/env bash
# How repeatable is the quick start? Runs the README's first command RUNS times in a row
# (the release binary, on the embedded queue manager, nothing else needed) and prints each
# run's rate and driver CPU per round trip, then their best, median, worst and spread
# ((worst - best) / median). The README states the spread this measured.
#
#   bash lab/quickstart-spread.sh [RUNS] [-- OEMPUTX ARGS]   (defaults: 10, the quick start's
#                                                              --count 100000 --rounds 5)
#
# Writes each run's JSON to $LAB_OUT/quickstart-<date>/ (target/lab by default).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
shift || true
[ "${1:-}" = "--" ] && shift
[ "$#" -eq 0 ] && set -- --count 100000 --rounds 5
out=${LAB_OUT:-target/lab}/quickstart-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$out"
cargo build --quiet --release --bin oemputx
bin=target/release/oemputx
for i in $(seq "$runs"); do
  "$bin" "$@" --export-json "$out/run-$i.json" >"$out/run-$i.txt"
done
python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
rows = []
for i in range(1, runs + 1):
    j = json.load(open(f"{out}/run-{i}.json"))
    drv = next((g["total_us_per_tran"] for g in j["groups"] if g["name"] == "DRIVER"), None)
    rows.append((j["rate_tps"], j["round_trip_us"]["mean"], drv, j["capture_ratio"]["value"]))
    print(f"run {i:2}: {rows[-1][0]:12.0f} tps  round trip {rows[-1][1]:7.2f} us  "
          f"DRIVER {drv:6.2f} us/round trip  capture ratio {rows[-1][3]:.3f}")
for name, k, fmt in (("rate (tps)", 0, "{:.0f}"), ("round trip (us)", 1, "{:.2f}"),
                     ("DRIVER (us/round trip)", 2, "{:.2f}")):
    v = sorted(r[k] for r in rows)
    med = statistics.median(v)
    print(f"{name:24} best/median/worst " + " / ".join(fmt.format(x) for x in (v[0], med, v[-1]))
          + f"  spread {100 * (v[-1] - v[0]) / med:.1f} %")
within = sorted(json.load(open(f"{out}/run-{i}.json"))["rounds_summary"]["rate_tps"]["spread_pct"]
                for i in range(1, runs + 1))
print(f"rounds within a run: rate spread {within[0]:.1f} … {within[-1]:.1f} % (median {statistics.median(within):.1f} %)")
print(f"(JSON and text of each run in {out})")
PY
