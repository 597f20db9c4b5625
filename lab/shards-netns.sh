#!/usr/bin/env bash
# Shards on hosts of their own (issue 33): three driver hosts and the broker's host as
# network namespaces on a bridge, each with its own address. Every round runs, in
# alternating order, the same load two ways against the same flow:
#   sharded  three shards (--shard I/3 of --tasks 6, 2 tasks each), one per driver host,
#            one common window (--start-at, --duration), shard 0 measuring the broker and
#            the flow (--measure), then oemputx merge;
#   single   one oemputx with --tasks 6 on the first driver host, the same groups.
# and checks: the merged transactions and integrity counters are the shards' sums exactly;
# the merged p50/p99 equal those of the shards' histograms added by another implementation
# (Python's hdrhistogram, from the reports' V2+DEFLATE encodings; p at the sample of rank
# ceil(p * n)); and prints the broker's
# and the flow's us/tran both ways per round, with the medians and the paired ratio.
#
#   sudo bash lab/shards-netns.sh [ROUNDS=5] [DURATION=10s]
#
# Needs root (ip netns), RabbitMQ on 127.0.0.1:5672 (bash ci/services.sh), socat and
# python3's hdrhistogram (installed when missing). RabbitMQ listens on the loopback only and
# is left alone: the broker host's address (10.77.0.1, the bridge) forwards to it through
# socat, the same for both ways. Writes under $LAB_OUT/shards-netns-<date>/ (target/lab by
# default): every report, merged.json per round, runs.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "shards-netns: needs root for ip netns (run with sudo)" >&2; exit 2; }
rounds=${1:-5}
dur=${2:-10s}
command -v socat >/dev/null || apt-get install -y -qq socat >/dev/null
python3 -c 'import hdrh' 2>/dev/null || pip install -q hdrhistogram
out=${LAB_OUT:-target/lab}/shards-netns-$(date -u +%Y%m%d-%H%M)
mkdir -p "$out"
cargo build --quiet --release --workspace --bins
bin=target/release
q=MQSI.IN.NETNS.$$
url=amqp://guest:guest@10.77.0.1:5672/%2f
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for i in 1 2 3; do ip netns del "oemx-h$i" 2>/dev/null || true; done
  ip link del oemx-br 2>/dev/null || true
  rabbitmqctl -q delete_queue "$q" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# The hosts: a bridge at 10.77.0.1 (the broker's host), driver hosts at .11, .12, .13.
ip link add oemx-br type bridge
ip addr add 10.77.0.1/24 dev oemx-br
ip link set oemx-br up
for i in 1 2 3; do
  ip netns add "oemx-h$i"
  ip link add "oemx-v$i" type veth peer name eth0 netns "oemx-h$i"
  ip link set "oemx-v$i" master oemx-br up
  ip -n "oemx-h$i" addr add "10.77.0.1$i/24" dev eth0
  ip -n "oemx-h$i" link set eth0 up
  ip -n "oemx-h$i" link set lo up
done
socat TCP-LISTEN:5672,bind=10.77.0.1,fork,reuseaddr TCP:127.0.0.1:5672 &
pids+=($!)
"$bin/sample-flow" --echo --threads 2 --input-queue "$q" >"$out/flow.log" 2>&1 &
flow=$!
pids+=("$flow")
for _ in $(seq 50); do grep -q echoing "$out/flow.log" 2>/dev/null && break; sleep 0.2; done
groups=(--group QMGR=@rabbitmq --group "FLOW=pid:$flow")
common=(--qmgr "$url" --request-queue "$q" --duration "$dur" --warmup 200)
export OEMPUTX_NO_SAVE=1

sharded() {
  local k=$1 d="$out/round-$1-shards"
  mkdir -p "$d"
  local shard_pids=()
  for i in 0 1 2; do
    local extra=(--no-groups)
    [ "$i" = 0 ] && extra=(--measure "${groups[@]}")
    ip netns exec "oemx-h$((i + 1))" "$bin/oemputx" "${common[@]}" --tasks 6 \
      --shard "$i/3" --run-id "netns-$k" --start-at +4s "${extra[@]}" \
      --quiet --export-json "$d/shard-$i.json" &
    shard_pids+=($!)
  done
  for p in "${shard_pids[@]}"; do wait "$p"; done
  "$bin/oemputx" merge "$d" --quiet --export-json "$out/round-$k-merged.json"
}
single() {
  ip netns exec oemx-h1 "$bin/oemputx" "${common[@]}" --tasks 6 "${groups[@]}" \
    --quiet --export-json "$out/round-$1-single.json"
}

for k in $(seq "$rounds"); do
  if [ $((k % 2)) = 1 ]; then sharded "$k"; single "$k"; else single "$k"; sharded "$k"; fi
  echo "round $k done" >&2
done

python3 - "$out" "$rounds" <<'PY' | tee "$out/summary.txt"
import json, math, statistics, sys
from hdrh.histogram import HdrHistogram
out, rounds = sys.argv[1], int(sys.argv[2])
def nearest_rank(h, q):
    # The sample at rank ceil(q * n) (HdrHistogram_rust's value_at_quantile; Python's
    # get_value_at_percentile rounds the rank to nearest instead, one bucket apart at times).
    rank, cum = max(math.ceil(q * h.get_total_count()), 1), 0
    for it in h.get_recorded_iterator():
        cum += it.count_at_value_iterated_to
        if cum >= rank:
            return h.get_highest_equivalent_value(it.value_iterated_to)
def g(j, name):
    return next((x["total_us_per_tran"] for x in j["groups"] if x["name"] == name), float("nan"))
rows, ok = [], True
print("round\tway\ttrans\ttps\tp50_us\tp99_us\tQMGR_us\tFLOW_us\tchecks")
for k in range(1, rounds + 1):
    m = json.load(open(f"{out}/round-{k}-merged.json"))
    s = json.load(open(f"{out}/round-{k}-single.json"))
    shards = [json.load(open(f"{out}/round-{k}-shards/shard-{i}.json")) for i in range(3)]
    checks = []
    if m["transactions"] != sum(x["transactions"] for x in shards):
        checks.append("transactions"); ok = False
    for key in m["integrity"]:
        if m["integrity"][key] != sum(x["integrity"][key] for x in shards):
            checks.append("integrity." + key); ok = False
    i = m["integrity"]
    if i["sent"] != i["matched"] + i["timed_out"] + i["abandoned"] and "abandoned" in i:
        checks.append("sent!=matched+timed_out+abandoned"); ok = False
    h = None
    for x in shards:
        hx = HdrHistogram.decode(x["round_trip_histogram"])
        if h is None: h = hx
        else: h.add(hx)
    py = {p: nearest_rank(h, p / 100) / 1000 for p in (50, 99)}
    mine = {p: next(r["us"] for r in m["round_trip_percentiles"] if r["pct"] == p) for p in (50.0, 99.0)}
    for p in (50, 99):
        if abs(py[p] - mine[float(p)]) > 1e-9:
            checks.append(f"p{p} {mine[float(p)]} vs {py[p]}"); ok = False
    for way, j in (("sharded", m), ("single", s)):
        p50 = next(r["us"] for r in j["round_trip_percentiles"] if r["pct"] == 50.0)
        p99 = next(r["us"] for r in j["round_trip_percentiles"] if r["pct"] == 99.0)
        rows.append((k, way, g(j, "QMGR"), g(j, "FLOW"), j["rate_tps"]))
        print(f"{k}\t{way}\t{j['transactions']}\t{j['rate_tps']:.0f}\t{p50:.1f}\t{p99:.1f}\t"
              f"{g(j, 'QMGR'):.2f}\t{g(j, 'FLOW'):.2f}\t"
              + (("ok" if not checks else " ".join(checks)) if way == "sharded" else "-"))
for name, idx in (("QMGR", 2), ("FLOW", 3), ("rate", 4)):
    sh = [r[idx] for r in rows if r[1] == "sharded"]
    si = [r[idx] for r in rows if r[1] == "single"]
    ratios = sorted(a / b for a, b in zip(sh, si))
    spread = lambda v: 100 * (max(v) - min(v)) / statistics.median(v)
    print(f"{name}: sharded median {statistics.median(sh):.2f} (spread {spread(sh):.1f} %), "
          f"single median {statistics.median(si):.2f} (spread {spread(si):.1f} %), "
          f"sharded/single per round median {statistics.median(ratios):.3f} "
          f"[{ratios[0]:.3f} .. {ratios[-1]:.3f}]")
print("merge checks (transactions, integrity, p50/p99 against hdrh's sum):", "all exact" if ok else "FAILED")
sys.exit(0 if ok else 1)
PY
