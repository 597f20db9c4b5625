#!/usr/bin/env bash
# The cost of the progress bar and of --stats-interval, measured side by side with both off:
# interleaved rounds of the same embedded run (the fastest loop, so the most sensitive to any
# overhead), each variant in a real terminal (tmux) so the bar is drawn. Prints the median
# rate and driver CPU per message of each variant, and their ratios to "off".
# Usage: lab/progress-cost.sh [ROUNDS] [COUNT]     (needs tmux and python3)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}; count=${2:-300000}
cargo build --release --quiet --bin oemputx
bin=$PWD/target/release/oemputx
out=$(mktemp -d)
trap 'rm -rf "$out"; tmux kill-session -t oemputx-progress-cost 2>/dev/null || true' EXIT
run() { # variant round args...
  local variant=$1 round=$2; shift 2
  tmux new-session -d -s oemputx-progress-cost -x 120 -y 30 \
    "OEMPUTX_NO_SAVE=1 $bin --count $count --export-json $out/$variant-$round.json $* > /dev/null; tmux wait-for -S oemputx-done"
  tmux wait-for oemputx-done
  tmux kill-session -t oemputx-progress-cost 2>/dev/null || true
}
for r in $(seq 1 "$rounds"); do
  run off "$r" --no-progress
  run bar "$r"
  run stats "$r" --no-progress --stats-interval 1s
done
python3 - "$out" <<'PY'
import json, glob, os, statistics, sys
d = sys.argv[1]
med = {}
for v in ("off", "bar", "stats"):
    runs = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(d, v + "-*.json")))]
    med[v] = (statistics.median(r["rate_tps"] for r in runs), statistics.median(r["app_cpu"]["us_per_tran"] for r in runs), len(runs))
for v, (rate, cpu, n) in med.items():
    print(f"{v:>5}: {n} runs, median rate {rate:10.0f} tps, median driver CPU {cpu:6.2f} us/msg"
          + ("" if v == "off" else f"   ({100*rate/med['off'][0]:.1f}% of off's rate, {100*cpu/med['off'][1]:.1f}% of its CPU)"))
PY
