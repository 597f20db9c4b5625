#!/usr/bin/env bash
# How close --profile puts each function to its truth: the C hold-out responder
# (lab/holdout/burn_responder.c) burns 60 and 20 µs of CPU per message in parse_request and
# render_reply and measures what each really took with its thread's CPU clock; oemputx
# --profile reports each function's µs per message. RUNS runs of COUNT messages in each of
# three variants, interleaved: re-phasing on with ±50 % jitter in the work, re-phasing off
# (OEMPUTX_PROFILE_REPHASE=off) with the same jitter, and re-phasing on with no jitter.
# Prints each run's error per function, the group's coverage and any lock-in flag.
# Usage: lab/profile-accuracy.sh [RUNS] [COUNT]    (as root; needs perf, gcc, librabbitmq-dev, RabbitMQ)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-6}; count=${2:-15000}
cargo build --release --quiet --bin oemputx
out=${OUT:-$(mktemp -d)}; mkdir -p "$out"
gcc -O2 -g -fno-omit-frame-pointer -o "$out/burn_responder" lab/holdout/burn_responder.c -lrabbitmq
url=amqp://guest:guest@127.0.0.1:5672/%2f
one() { # name jitter rephase
  local q=oemputx.profile-accuracy.$$.$RANDOM
  "$out/burn_responder" --input-queue "$q" --url "$url" --jitter "$2" --truth "$out/$1.truth" > /dev/null &
  local rp=$!
  sleep 0.5
  OEMPUTX_NO_SAVE=1 OEMPUTX_PROFILE_REPHASE=$3 target/release/oemputx --qmgr "$url" --request-queue "$q" \
    --count "$count" --group FLOW=pid:$rp --profile --no-progress --quiet --export-json "$out/$1.json" || true
  kill $rp; wait $rp 2>/dev/null || true
  rabbitmqctl delete_queue "$q" > /dev/null 2>&1 || true
}
for r in $(seq 1 "$runs"); do
  one "jitter-rephased-$r" 0.5 on
  one "jitter-fixed-grid-$r" 0.5 off
  one "regular-rephased-$r" 0 on
done
python3 - "$out" "$runs" <<'PY'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
for v in ("jitter-rephased", "jitter-fixed-grid", "regular-rephased"):
    print(v)
    worst = 0
    for r in range(1, n + 1):
        t = json.load(open(f"{d}/{v}-{r}.truth")); j = json.load(open(f"{d}/{v}-{r}.json"))
        g = next(g for g in j["profile"]["groups"] if g["name"] == "FLOW")
        cells = []
        for f in ("parse_request", "render_reply"):
            row = next((x for x in g["functions"] if x["name"] == f), None)
            got = row["total_us_per_tran"] if row else 0.0
            err = 100 * (got / t[f + "_us"] - 1)
            worst = max(worst, abs(err))
            flag = " lock-in?" if row and row.get("lock_in") else ""
            cells.append(f"{f} {got:6.2f}/{t[f + '_us']:6.2f} ({err:+5.1f} %){flag}")
        print(f"  run {r}: " + "; ".join(cells) + f"; coverage {g['coverage']:.2f}")
    print(f"  largest error {worst:.1f} %")
print(f"files in {d}")
PY
