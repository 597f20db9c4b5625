#!/usr/bin/env bash
# What --profile costs the reference flow (RabbitMQ, sample-flow, PostgreSQL), side by side:
# PAIRS pairs of runs, one without --profile and one with it, in alternating order, each
# --count COUNT against the same flow process. Prints, per group and for the captured total,
# the median µs/msg of each side and the median of the pairs' ratios (with --profile ÷
# without): the sampling's cost inside the figures. perf's own CPU (outside them) is the
# profile's perf_cpu_us_per_tran. The last profiled run's text is kept in $OUT/profile.txt.
# Usage: lab/profile-overhead.sh [PAIRS] [COUNT]     (as root; needs perf, RabbitMQ, PostgreSQL)
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-8}; count=${2:-20000}
cargo build --release --quiet --workspace
bin=$PWD/target/release/oemputx
out=${OUT:-$(mktemp -d)}; mkdir -p "$out"
q=oemputx.profile-overhead.$$
url=amqp://guest:guest@127.0.0.1:5672/%2f
target/release/sample-flow --url "$url" --input-queue "$q" --db postgres://postgres@127.0.0.1:5432/test > "$out/flow.log" 2>&1 &
flow=$!
trap 'kill $flow 2>/dev/null || true; rabbitmqctl delete_queue "$q" >/dev/null 2>&1 || true' EXIT
sleep 2
run() { # side pair args...
  local side=$1 pair=$2; shift 2
  OEMPUTX_NO_SAVE=1 "$bin" --qmgr "$url" --request-queue "$q" --count "$count" --warmup 500 \
    --group FLOW=pid:$flow --group QMGR=@rabbitmq --group DB=@postgresql \
    --no-progress --export-json "$out/$side-$pair.json" "$@" > "$out/$side-$pair.txt"
}
for p in $(seq 1 "$pairs"); do
  if [ $((p % 2)) = 1 ]; then run off "$p"; run on "$p" --profile; else run on "$p" --profile; run off "$p"; fi
done
cp "$out/on-$pairs.txt" "$out/profile.txt"
python3 - "$out" "$pairs" <<'PY'
import json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
def load(side, p): return json.load(open(f"{d}/{side}-{p}.json"))
def fig(r, name):
    if name == "captured": return r["captured_us_per_tran"]
    return next(g["total_us_per_tran"] for g in r["groups"] if g["name"] == name)
names = [g["name"] for g in load("off", 1)["groups"]] + ["captured"]
print(f"{n} pairs of {load('off', 1)['transactions']} messages, reference flow; with --profile / without:")
for name in names:
    off = [fig(load("off", p), name) for p in range(1, n + 1)]
    on = [fig(load("on", p), name) for p in range(1, n + 1)]
    ratios = [b / a for a, b in zip(off, on) if a > 0]
    print(f"  {name:>9}: {statistics.median(off):8.2f} -> {statistics.median(on):8.2f} us/msg, median ratio {statistics.median(ratios):.3f} [{min(ratios):.3f} .. {max(ratios):.3f}]")
perf = [load("on", p)["profile"]["perf_cpu_us_per_tran"] for p in range(1, n + 1)]
print(f"  perf's own CPU (outside the figures): median {statistics.median(perf):.2f} us/msg")
print(f"  files in {d}")
PY
