#!/usr/bin/env bash
# The JMS stock-ticker study's two ways of selecting on ActiveMQ, side by side: JMS message
# selectors (one topic, each subscriber's block as `symbol IN (...)`, evaluated by the
# broker per message per subscriber) against a topic per symbol (no selector). Interleaved
# rounds of `oemputx pubsub --select-by header` and `--select-by topic` at the same paced
# rate, then the medians of ActiveMQ's CPU per message published and per message delivered.
#
#   bash lab/activemq-selectors.sh [ROUNDS] [COUNT] [RATE] [SUBSCRIBERS] [SYMBOLS] [SELECT]
#                                  (defaults: 5, 20000, 2000, 10, 100, 10)
#
# Needs ActiveMQ with its STOMP connector (bash ci/services.sh). Uses target/release
# (OEMPUTX_BIN overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
count=${2:-20000}
rate=${3:-2000}
subs=${4:-10}
symbols=${5:-100}
select=${6:-10}
bin=${OEMPUTX_BIN:-target/release/oemputx}
url=${OEMPUTX_URL:-stomp://admin:admin@127.0.0.1:61613}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# One unmeasured run of each first: ActiveMQ's JIT compiles the selector path on first use.
for how in header topic; do
  "$bin" pubsub --qmgr "$url" --topic "oemputx.sel.warm.$$" --count $((count / 4)) --rate "$rate" \
    --subscribers "$subs" --symbols "$symbols" --select "$select" --select-by "$how" \
    --group QMGR=@activemq --no-save >/dev/null
done
for r in $(seq "$rounds"); do
  # Alternate which goes first, so that drift falls on both alike.
  order="header topic"; [ $((r % 2)) -eq 0 ] && order="topic header"
  for how in $order; do
    "$bin" pubsub --qmgr "$url" --topic "oemputx.sel.$$.$r" --count "$count" --rate "$rate" \
      --subscribers "$subs" --symbols "$symbols" --select "$select" --select-by "$how" \
      --group QMGR=@activemq --no-save --export-json "$dir/$how.$r.json" >/dev/null
  done
done
python3 - "$dir" "$rounds" "$count" "$rate" "$subs" "$symbols" "$select" <<'PY'
import json, statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
print(f"ActiveMQ over STOMP: {sys.argv[3]} messages at {sys.argv[4]}/s, {sys.argv[5]} subscribers, "
      f"{sys.argv[6]} symbols, {sys.argv[7]} per subscriber; medians of {rounds} interleaved rounds")
print("| selection | broker µs/published | broker µs/delivered | subscriber msg/s | lost+dup |")
print("|---|---:|---:|---:|---:|")
for how, name in [("header", "JMS selector symbol IN (...)"), ("topic", "a topic per symbol")]:
    runs = [json.load(open(f"{d}/{how}.{r}.json")) for r in range(1, rounds + 1)]
    q = lambda j, k: next(g["total_us_per_tran"] for g in j[k]["groups"] if g["name"] == "QMGR")
    pub = statistics.median(q(j, "cpu_per_published") for j in runs)
    dlv = statistics.median(q(j, "cpu_per_delivered") for j in runs)
    mps = statistics.median(j["subscriber_mps"]["median"] for j in runs)
    bad = sum(j["lost"] + j["duplicates"] for j in runs)
    print(f"| {name} | {pub:.2f} | {dlv:.2f} | {mps:.1f} | {bad} |")
PY
