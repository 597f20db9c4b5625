#!/usr/bin/env bash
# The broker's cost per message, driven by Slurm from two nodes and merged, against one
# host driving the same total load right after (issue 46), in alternating order for ROUNDS
# rounds; then one 8-shard job (4 per node) for its start spread and merge time.
#
#   sudo bash lab/slurm-vs-one-host.sh [ROUNDS=4] [DURATION=10s]
#
# Needs the lab (bash ci/slurm-lab.sh up) and RabbitMQ; builds the release binaries (a
# debug driver's own CPU crowds the broker on a small host). Writes under $LAB_OUT/slurm-<date>/ (target/lab by default): every report,
# the jobs' output, summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-4}
dur=${2:-10s}
bash ci/slurm-lab.sh status || { echo "slurm-vs-one-host: the lab is not up: bash ci/slurm-lab.sh up" >&2; exit 2; }
# shellcheck disable=SC1091
set -a; . "${OEMPUTX_LAB_DIR:-/var/tmp/oemputx-slurm-lab}/env"; set +a
cargo build --quiet --release --workspace --bins
bin=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release
out=$(realpath -m "${LAB_OUT:-target/lab}/slurm-$(date -u +%Y%m%d-%H%M)")
mkdir -p "$out"
q=OEMX.SLURM.LAB.$$
"$bin/sample-flow" --input-queue "$q" --echo >"$out/flow.log" 2>&1 &
flow=$!
trap 'kill $flow 2>/dev/null || true; rabbitmqctl -q delete_queue "$q" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 50); do grep -q echoing "$out/flow.log" 2>/dev/null && break; sleep 0.2; done
args="--request-queue $q --tasks 4 --duration $dur --warmup 200"
export OEMPUTX_BIN=$bin/oemputx OEMPUTX_QMGR=$OEMPUTX_LAB_AMQP OEMPUTX_ARGS=$args
export OEMPUTX_MEASURE="--group QMGR=@rabbitmq" OEMPUTX_LEAD=5 OEMPUTX_WAIT=10

sharded() { OEMPUTX_OUT=$out/round-$1-shards sbatch --wait --quiet --nodes=2 -o "$out/round-$1-job.out" deploy/slurm/oemputx-shards.sbatch; }
single() {
  # shellcheck disable=SC2086
  srun --nodes=1 --ntasks=1 --nodelist=s1 "$bin/oemputx" --qmgr "$OEMPUTX_LAB_AMQP" $args \
    --group QMGR=@rabbitmq --no-save --quiet --export-json "$out/round-$1-single.json"
}
for k in $(seq "$rounds"); do
  if [ $((k % 2)) = 1 ]; then sharded "$k"; single "$k"; else single "$k"; sharded "$k"; fi
  echo "round $k done" >&2
done
OEMPUTX_OUT=$out/eight OEMPUTX_LEAD=8 OEMPUTX_ARGS="--request-queue $q --tasks 8 --duration $dur --warmup 200" \
  sbatch --wait --quiet --nodes=2 --ntasks-per-node=4 -o "$out/eight-job.out" deploy/slurm/oemputx-shards.sbatch
t0=$(date +%s.%N)
"$bin/oemputx" merge "$out"/eight/shard-*.json --quiet --export-json "$out/eight-again.json"
t1=$(date +%s.%N)

python3 - "$out" "$rounds" "$(echo "$t1 - $t0" | bc)" <<'PY' | tee "$out/summary.txt"
import json, statistics, sys
out, rounds, merge_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
def q(j): return next(g["total_us_per_tran"] for g in j["groups"] if g["name"] == "QMGR")
ratios = []
print("round\tsharded_trans\tsharded_QMGR_us\tnodes\tsingle_trans\tsingle_QMGR_us\tratio")
for k in range(1, rounds + 1):
    m = json.load(open(f"{out}/round-{k}-shards/run.json"))
    s = json.load(open(f"{out}/round-{k}-single.json"))
    nodes = ",".join(r.get("node", "?") for r in m["merged"]["shards"])
    ratios.append(q(m) / q(s))
    print(f"{k}\t{m['transactions']}\t{q(m):.2f}\t{nodes}\t{s['transactions']}\t{q(s):.2f}\t{ratios[-1]:.3f}")
print(f"sharded/single QMGR us/tran: median {statistics.median(ratios):.3f} [{min(ratios):.3f} .. {max(ratios):.3f}]")
e = json.load(open(f"{out}/eight/run.json"))
print(f"8 shards: nodes {[r.get('node') for r in e['merged']['shards']]}, {e['transactions']} trans, "
      f"start_spread_s {e['merged']['start_spread_s']}, late max {max(r['late_for_start_s'] or 0 for r in e['merged']['shards'])} s, "
      f"merge of the 8 files {merge_s:.3f} s")
PY
