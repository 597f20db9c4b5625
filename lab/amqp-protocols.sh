#!/usr/bin/env bash
# The same echo flow driven over AMQP 0-9-1 and over AMQP 1.0 on one RabbitMQ, side by
# side: interleaved rounds, then the medians of rate and CPU per transaction (broker,
# flow, driver) for each protocol. What users ask when choosing a protocol.
#
#   bash lab/amqp-protocols.sh [ROUNDS] [COUNT] [TASKS]      (defaults: 7, 5000, 2)
#
# Needs RabbitMQ with the AMQP 1.0 plugin (bash ci/services.sh). Uses target/release
# (OEMPUTX_BIN and SAMPLE_FLOW_BIN override).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
count=${2:-5000}
tasks=${3:-2}
bin=${OEMPUTX_BIN:-target/release/oemputx}
flow=${SAMPLE_FLOW_BIN:-target/release/sample-flow}
u091="amqp://guest:guest@127.0.0.1:5672/%2f"
u10="amqp10://guest:guest@127.0.0.1:5672"
q091="oemputx.protocols.091.$$"
q10="oemputx.protocols.10.$$"
dir=$(mktemp -d)
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  if command -v rabbitmqctl >/dev/null; then
    rabbitmqctl delete_queue "$q091" >/dev/null 2>&1 || true
    rabbitmqctl delete_queue "$q10" >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}
pids=()
trap cleanup EXIT
"$flow" --echo --url "$u091" --input-queue "$q091" 2>/dev/null & pids+=($!)
"$flow" --echo --url "$u10" --input-queue "$q10" 2>/dev/null & pids+=($!)
sleep 1
run() { # protocol url queue flow-pid round
  "$bin" --qmgr "$2" --request-queue "$3" --count "$count" --tasks "$tasks" \
    --warmup $((count / 10)) --group QMGR=@rabbitmq --group "FLOW=pid:$4" \
    --no-save --quiet --export-json "$dir/$1.$5.json"
}
for r in $(seq "$rounds"); do
  # Alternate which goes first, so that neither always follows the other.
  if [ $((r % 2)) -eq 1 ]; then
    run 091 "$u091" "$q091" "${pids[0]}" "$r"; run 10 "$u10" "$q10" "${pids[1]}" "$r"
  else
    run 10 "$u10" "$q10" "${pids[1]}" "$r"; run 091 "$u091" "$q091" "${pids[0]}" "$r"
  fi
done
python3 - "$dir" "$rounds" "$count" "$tasks" <<'PY'
import glob, json, statistics, sys
d, rounds, count, tasks = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
def med(proto, f):
    return statistics.median(f(json.load(open(p))) for p in glob.glob(f"{d}/{proto}.*.json"))
def group(name):
    return lambda j: [g for g in j["groups"] if g["name"] == name][0]["total_us_per_tran"]
print(f"AMQP 0-9-1 vs AMQP 1.0 on one RabbitMQ: sample-flow --echo, 630-byte requests, "
      f"{tasks} task(s), {count} per round, medians of {rounds} interleaved rounds")
print(f"| protocol | rate (tps) | RabbitMQ CPU µs/tran | flow µs/tran | driver µs/tran | matched |")
print(f"|---|---:|---:|---:|---:|---:|")
for proto, name in [("091", "AMQP 0-9-1"), ("10", "AMQP 1.0")]:
    matched = sum(json.load(open(p))["integrity"]["matched"] for p in glob.glob(f"{d}/{proto}.*.json"))
    print(f"| {name} | {med(proto, lambda j: j['rate_tps']):.0f} | {med(proto, group('QMGR')):.2f} | "
          f"{med(proto, group('FLOW')):.2f} | {med(proto, group('DRIVER')):.2f} | {matched} |")
PY
