#!/usr/bin/env bash
# How long a ladder takes and how far ladders of the same flow on one host disagree on its
# top (issue 56): N ladders of `--rates auto` in a row against one flow process, each with
# its JSON kept. Prints each ladder's time, top, interval and what limited it, then the
# median time, the spread of the tops (max/min) and the median of the relative differences
# between consecutive ladders' tops, |a − b| / mean.
#
# FLOW is `burn` (lab/holdout/burn_responder.c: one thread, US µs of CPU a message; its own
# drain rate is measured first, by queueing 1,000 requests before it starts and timing
# their replies, and each top is given against it) or `reference` (sample-flow with
# PostgreSQL, the reference flow of docs/ladder.md).
# Usage: lab/ladder-repeat.sh [N] [burn|reference] [US] [extra ladder options...]
#        (needs RabbitMQ; burn needs gcc and librabbitmq-dev, reference PostgreSQL)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5}; flow=${2:-burn}; us=${3:-1000}; shift $(( $# < 3 ? $# : 3 ))
cargo build --release --quiet --workspace
bin=$PWD/target/release/oemputx
out=${OUT:-target/lab/ladder-repeat-$(date -u +%Y%m%d-%H%M%S)}; mkdir -p "$out"
q=oemputx.ladder-repeat.$$
url=amqp://guest:guest@127.0.0.1:5672/%2f
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rabbitmqctl delete_queue "$q" >/dev/null 2>&1 || true
  rabbitmqctl delete_queue "$q.drained" >/dev/null 2>&1 || true
}
trap cleanup EXIT
drain=""
case "$flow" in
  burn)
    gcc -O2 -g -fno-omit-frame-pointer -o "$out/burn_responder" lab/holdout/burn_responder.c -lrabbitmq
    # The drain rate, apart from oemputx: 1,000 requests queued, then the responder started.
    python3 -c 'import pika' 2>/dev/null || python3 -m pip install -q pika
    # The same responder process then serves the ladders: its calibration is its own.
    read -r drain pid < <(python3 lab/ladder-drain.py "$url" "$q" 1000 "$out/burn_responder" "$us" "$out/flow.log")
    pids+=("$pid"); group="FLOW=pid:$pid"
    echo "burn responder $pid, $us µs a message: drain rate $drain msg/s (its own, measured apart)"
    ;;
  reference)
    target/release/sample-flow --url "$url" --input-queue "$q" --db postgres://postgres@127.0.0.1:5432/test > "$out/flow.log" 2>&1 &
    pids+=($!); group="FLOW=pid:$!"
    ;;
  *) echo "FLOW is burn or reference" >&2; exit 2 ;;
esac
sleep 1
for i in $(seq 1 "$n"); do
  db=(); [ "$flow" = reference ] && db=(--group DB=@postgresql)
  OEMPUTX_NO_SAVE=1 "$bin" ladder --qmgr "$url" --request-queue "$q" --group "$group" \
    --group QMGR=@rabbitmq "${db[@]}" --quiet --export-json "$out/ladder-$i.json" "$@"
done
python3 - "$out" "$n" "$drain" <<'PY'
import json, statistics, sys
d, n, drain = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ls = [json.load(open(f"{d}/ladder-{i}.json")) for i in range(1, n + 1)]
tops = []
for i, l in enumerate(ls, 1):
    top = l["max_sustainable_tps"]
    vs = f", {100 * (top / float(drain) - 1):+.1f} % of the drain rate" if drain and top else ""
    print(f"  ladder {i}: {l['elapsed_s']:6.1f} s, {len(l['steps'])} steps, top {top} [{l['max_sustainable_low_tps']}, {l['max_sustainable_high_tps']}]{vs}, limited by {l['limited_by']}")
    if top: tops.append(top)
times = [l["elapsed_s"] for l in ls]
print(f"time: median {statistics.median(times):.1f} s (range {min(times):.1f} .. {max(times):.1f})")
if len(tops) >= 2:
    pair = [abs(a - b) / ((a + b) / 2) for a, b in zip(tops, tops[1:])]
    print(f"tops: median {statistics.median(tops):.0f} msg/s, max/min {max(tops) / min(tops):.3f}; consecutive ladders differ by a median {100 * statistics.median(pair):.1f} % (largest {100 * max(pair):.1f} %)")
print(f"files in {d}")
PY
