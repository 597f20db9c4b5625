#!/usr/bin/env bash
# Drive a NATS responder written with another client (nats-py, ci/holdout/nats_responder.py)
# and compare its own getrusage CPU per message with oemputx's FLOW group figure.
#
#   bash ci/nats-holdout.sh [COUNT] [BURN_US]        (defaults: 3000, 100)
#
# Needs NATS on 127.0.0.1:4222 (bash ci/services.sh) and python3; installs nats-py with pip
# when it is missing. Uses target/release/oemputx (OEMPUTX_BIN overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-3000}
burn=${2:-100}
bin=${OEMPUTX_BIN:-target/release/oemputx}
python3 -c 'import nats' 2>/dev/null || python3 -m pip install -q nats-py
subject="oemputx.holdout.$$"
out=$(mktemp)
trap 'rm -f "$out" "$out.json"; kill "$responder" 2>/dev/null || true' EXIT
python3 ci/holdout/nats_responder.py "$subject" "$burn" >"$out" &
responder=$!
for _ in $(seq 50); do grep -q ready "$out" && break; sleep 0.1; done
"$bin" --qmgr nats://127.0.0.1:4222 --request-queue "$subject" --count "$count" \
  --group "FLOW=pid:$responder" --group QMGR=@nats --no-save --quiet --export-json "$out.json"
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
