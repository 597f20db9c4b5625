#!/usr/bin/env bash
# Why docs/gate.md gates cost at a fixed rate (issue 56): N pairs of runs of the reference
# flow (RabbitMQ, sample-flow, PostgreSQL), one unpaced and one paced by --rate RATE, in
# alternating order against the same flow process, each --duration SECS. Prints, per mode,
# the runs' corrected µs/msg (median, spread max/min, coefficient of variation) and their
# rates, and for the unpaced runs the correlation between the rate a run reached and its
# cost per message: how much of an unpaced figure is its throughput.
# Usage: lab/gate-rate.sh [N] [RATE] [SECS]     (needs RabbitMQ and PostgreSQL)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-8}; rate=${2:-1000}; secs=${3:-10}
cargo build --release --quiet --workspace
bin=$PWD/target/release/oemputx
out=${OUT:-target/lab/gate-rate-$(date -u +%Y%m%d-%H%M%S)}; mkdir -p "$out"
q=oemputx.gate-rate.$$
url=amqp://guest:guest@127.0.0.1:5672/%2f
target/release/sample-flow --url "$url" --input-queue "$q" --db postgres://postgres@127.0.0.1:5432/test > "$out/flow.log" 2>&1 &
flow=$!
trap 'kill $flow 2>/dev/null || true; rabbitmqctl delete_queue "$q" >/dev/null 2>&1 || true' EXIT
sleep 2
run() { # mode i args...
  local mode=$1 i=$2; shift 2
  OEMPUTX_NO_SAVE=1 "$bin" --qmgr "$url" --request-queue "$q" --duration "${secs}s" --rounds 5 \
    --tasks 2 --warmup 500 --group FLOW=pid:$flow --group QMGR=@rabbitmq --group DB=@postgresql \
    --quiet --export-json "$out/$mode-$i.json" "$@"
}
for i in $(seq 1 "$n"); do
  if [ $((i % 2)) = 1 ]; then run unpaced "$i"; run paced "$i" --rate "$rate"
  else run paced "$i" --rate "$rate"; run unpaced "$i"; fi
done
python3 - "$out" "$n" "$rate" <<'PY'
import json, statistics, sys
d, n, rate = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def load(mode, i): return json.load(open(f"{d}/{mode}-{i}.json"))
for mode in ["unpaced", "paced"]:
    rs = [load(mode, i) for i in range(1, n + 1)]
    cost = [r["corrected_us_per_tran"] or r["captured_us_per_tran"] for r in rs]
    tps = [r["rate_tps"] for r in rs]
    cv = statistics.stdev(cost) / statistics.mean(cost)
    label = "unpaced" if mode == "unpaced" else f"--rate {rate}"
    print(f"{label:>12}: corrected {statistics.median(cost):7.1f} µs/msg, max/min {max(cost) / min(cost):.3f}, CV {100 * cv:.1f} %; rate {min(tps):.0f} .. {max(tps):.0f} msg/s")
    if mode == "unpaced" and len(set(tps)) > 1:
        print(f"{'':>12}  correlation of cost with the rate reached: r = {statistics.correlation(tps, cost):+.2f}")
print(f"files in {d}")
PY
