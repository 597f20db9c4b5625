#!/usr/bin/env bash
# A subscriber written with another client selects a block of symbols during an
# `oemputx pubsub` run; it must receive exactly the count oemputx says was published for
# that block.
#
#   bash lab/pubsub-holdout.sh [nats|activemq] [COUNT] [FIRST] [LAST]
#                                          (defaults: nats, 20000, 40, 64)
#
# nats: nats-py subscribing to a subject per symbol (lab/holdout/pubsub_subscriber.py).
# activemq: stomp.py subscribing to the run's topic with the JMS selector
# symbol IN ('S40',...,'S64') (lab/holdout/stomp_subscriber.py), beside oemputx's own
# subscribers with theirs (--select-by header).
# Needs the broker (bash ci/services.sh) and python3 (installs the client with pip when
# missing). Uses target/release/oemputx (OEMPUTX_BIN overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
broker=nats
case "${1:-}" in nats|activemq) broker=$1; shift ;; esac
count=${1:-20000}
first=${2:-40}
last=${3:-64}
bin=${OEMPUTX_BIN:-target/release/oemputx}
topic="oemputx_holdout_$$"
case "$broker" in
  nats)
    python3 -c 'import nats' 2>/dev/null || python3 -m pip install -q nats-py
    subscriber=lab/holdout/pubsub_subscriber.py
    run=(--qmgr nats://127.0.0.1:4222) ;;
  activemq)
    python3 -c 'import stomp' 2>/dev/null || python3 -m pip install -q stomp.py
    subscriber=lab/holdout/stomp_subscriber.py
    run=(--qmgr stomp://admin:admin@127.0.0.1:61613 --select-by header --ack auto) ;;
esac
out=$(mktemp)
trap 'rm -f "$out" "$out.json"; kill "$sub" 2>/dev/null || true' EXIT
python3 "$subscriber" "$topic" "$first" "$last" 2 >"$out" &
sub=$!
for _ in $(seq 50); do grep -q ready "$out" && break; sleep 0.1; done
"$bin" pubsub "${run[@]}" --topic "$topic" --count "$count" \
  --subscribers 10 --rate 5000 --export-json "$out.json" >/dev/null
sleep 1
kill -TERM "$sub"; wait "$sub" || true
python3 - "$out" "$out.json" "$first" "$last" "$(basename "$subscriber")" <<'PY'
import json, sys
words = open(sys.argv[1]).read().split()
got, distinct = int(words[words.index("received") + 1]), int(words[words.index("distinct") + 1])
j = json.load(open(sys.argv[2]))
first, last = int(sys.argv[3]), int(sys.argv[4])
n, symbols = j["published"], j["settings"]["symbols"]
# oemputx's own count of what it published into the block (symbols in order from S00).
block = sum(1 for m in range(n) if first <= m % symbols <= last)
print(f"oemputx published {n}; of them in S{first:02d}..S{last:02d}: {block}")
print(f"hold-out subscriber ({sys.argv[5]}) received {got}, distinct {distinct}: {'EXACT' if got == distinct == block else 'MISMATCH'}")
print(f"oemputx's own subscribers: delivered {j['delivered']} of {j['expected']} expected, lost {j['lost']}, duplicated {j['duplicates']}")
sys.exit(0 if got == distinct == block else 1)
PY
