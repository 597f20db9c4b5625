#!/usr/bin/env bash
# A subscriber written with another client (nats-py, lab/holdout/pubsub_subscriber.py)
# selects a block of symbols during an `oemputx pubsub` run on NATS; it must receive exactly
# the count oemputx says was published for that block.
#
#   bash lab/pubsub-holdout.sh [COUNT] [FIRST] [LAST]     (defaults: 20000, 40, 64)
#
# Needs NATS (bash ci/services.sh) and python3 (installs nats-py with pip when missing).
# Uses target/release/oemputx (OEMPUTX_BIN overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-20000}
first=${2:-40}
last=${3:-64}
bin=${OEMPUTX_BIN:-target/release/oemputx}
python3 -c 'import nats' 2>/dev/null || python3 -m pip install -q nats-py
topic="oemputx_holdout_$$"
out=$(mktemp)
trap 'rm -f "$out" "$out.json"; kill "$sub" 2>/dev/null || true' EXIT
python3 lab/holdout/pubsub_subscriber.py "$topic" "$first" "$last" 2 >"$out" &
sub=$!
for _ in $(seq 50); do grep -q ready "$out" && break; sleep 0.1; done
"$bin" pubsub --qmgr nats://127.0.0.1:4222 --topic "$topic" --count "$count" \
  --subscribers 10 --rate 5000 --export-json "$out.json" >/dev/null
sleep 1
kill -TERM "$sub"; wait "$sub" || true
python3 - "$out" "$out.json" "$first" "$last" <<'PY'
import json, sys
words = open(sys.argv[1]).read().split()
got, distinct = int(words[words.index("received") + 1]), int(words[words.index("distinct") + 1])
j = json.load(open(sys.argv[2]))
first, last = int(sys.argv[3]), int(sys.argv[4])
n, symbols = j["published"], j["settings"]["symbols"]
# oemputx's own count of what it published into the block (symbols in order from S00).
block = sum(1 for m in range(n) if first <= m % symbols <= last)
print(f"oemputx published {n}; of them in S{first:02d}..S{last:02d}: {block}")
print(f"hold-out subscriber (nats-py) received {got}, distinct {distinct}: {'EXACT' if got == distinct == block else 'MISMATCH'}")
print(f"oemputx's own subscribers: delivered {j['delivered']} of {j['expected']} expected, lost {j['lost']}, duplicated {j['duplicates']}")
sys.exit(0 if got == distinct == block else 1)
PY
