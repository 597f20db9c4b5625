#!/usr/bin/env bash
# Drive a responder written with another client than oemputx's and compare its own
# getrusage CPU per message with oemputx's FLOW group figure.
#
#   bash lab/holdout.sh nats   [COUNT] [BURN_US]   nats-py        (lab/holdout/nats_responder.py)
#   bash lab/holdout.sh amqp10 [COUNT] [BURN_US]   Qpid Proton    (lab/holdout/amqp10_responder.py)
#   bash lab/holdout.sh stomp  [COUNT] [BURN_US]   stomp.py       (lab/holdout/stomp_responder.py, ActiveMQ)
#   bash lab/holdout.sh mqtt   [COUNT] [BURN_US]   paho-mqtt      (lab/holdout/mqtt_responder.py, Mosquitto)
#   bash lab/holdout.sh kafka  [COUNT] [BURN_US]   confluent-kafka (lab/holdout/kafka_responder.py, tansu)
#
# Defaults: 3000 messages, 100 µs burnt per message. Arguments after BURN_US go to oemputx
# (--persistent, --tasks 2, ...). Needs the broker (bash ci/services.sh)
# and python3; installs the responder's client with pip when it is missing. Uses
# target/release/oemputx (OEMPUTX_BIN overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
transport=${1:?name the transport: nats, amqp10, stomp, mqtt or kafka}
python=python3
count=${2:-3000}
burn=${3:-100}
bin=${OEMPUTX_BIN:-target/release/oemputx}
case "$transport" in
  nats)
    python3 -c 'import nats' 2>/dev/null || python3 -m pip install -q nats-py
    queue="oemputx.holdout.$$"
    qmgr=nats://127.0.0.1:4222
    declare=()
    broker=QMGR=@nats ;;
  amqp10)
    python3 -c 'import proton' 2>/dev/null || python3 -m pip install -q python-qpid-proton
    queue="oemputx.holdout.amqp10.$$"
    qmgr=amqp10://guest:guest@127.0.0.1:5672
    # The responder's receiver on /queue/NAME creates the queue (not durable).
    declare=()
    broker=QMGR=@rabbitmq ;;
  stomp)
    python3 -c 'import stomp' 2>/dev/null || python3 -m pip install -q stomp.py
    queue="oemputx.holdout.stomp.$$"
    qmgr=stomp://admin:admin@127.0.0.1:61613
    declare=()
    broker=QMGR=@activemq ;;
  mqtt)
    python3 -c 'import paho.mqtt' 2>/dev/null || python3 -m pip install -q paho-mqtt
    queue="oemputx/holdout/$$"
    qmgr=mqtt://127.0.0.1:1883
    declare=()
    broker=QMGR=@mosquitto ;;
  kafka)
    # confluent-kafka lives in the venv ci/services.sh makes beside tansu.
    python=/opt/oemputx-kafka/bin/python
    "$python" -c 'import confluent_kafka' 2>/dev/null || "$python" -m pip install -q confluent-kafka
    queue="oemputx.holdout.kafka.$$"
    qmgr=kafka://${OEMPUTX_KAFKA:-127.0.0.1:19092}
    # The responder makes the topic (and deletes it when it stops).
    declare=()
    broker=QMGR=@kafka ;;
  *) echo "unknown transport $transport: nats, amqp10, stomp, mqtt or kafka" >&2; exit 2 ;;
esac
out=$(mktemp)
cleanup() {
  rm -f "$out" "$out.json"
  kill "$responder" 2>/dev/null || true
  # The responder made an AMQP 1.0 queue; RabbitMQ deletes queues over 0-9-1 or its CLI.
  if [ "$transport" = amqp10 ] && command -v rabbitmqctl >/dev/null; then
    rabbitmqctl delete_queue "$queue" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
"$python" "lab/holdout/${transport}_responder.py" "$queue" "$burn" >"$out" &
responder=$!
for _ in $(seq 50); do grep -q ready "$out" && break; sleep 0.1; done
"$bin" --qmgr "$qmgr" --request-queue "$queue" "${declare[@]}" --count "$count" \
  --group "FLOW=pid:$responder" --group "$broker" --no-save --quiet --export-json "$out.json" \
  "${@:4}"
kill -TERM "$responder"; wait "$responder" || true
python3 - "$out" "$out.json" <<'PY'
import json, sys
truth = dict(zip(*[iter(open(sys.argv[1]).read().split()[1:])] * 2))
j = json.load(open(sys.argv[2]))
flow = [g for g in j['groups'] if g['name'] == 'FLOW'][0]['total_us_per_tran']
t = float(truth['us_per_msg'])
i = j['integrity']
print(f"integrity: sent {i['sent']} matched {i['matched']} timed out {i['timed_out']} unmatched {i['unmatched']}")
print(f"responder's own getrusage: {t:.2f} us/msg over {truth['messages']} messages; oemputx FLOW: {flow:.2f} us/tran; difference {100 * (flow - t) / t:+.2f}%")
PY
