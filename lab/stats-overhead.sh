#!/usr/bin/env bash
# The statistics overhead experiment: the reference flow's cost per message with its own
# accounting and statistics off, per thread, and per node, measured by oemputx in rounds and
# tabulated by `oemputx compare` (median [min-max] of the rounds, and the Total Overhead %).
#
#   bash lab/stats-overhead.sh [COUNT] [ROUNDS]      (defaults 2000 and 7; MODE=disk, see below)
#
# Needs RabbitMQ and PostgreSQL (bash ci/services.sh) and a release build
# (cargo build --release --workspace --bins). Each level runs against a fresh flow on a fresh queue; the
# levels are run twice in opposite orders (off thread node node thread off) and each level's
# two runs are compared separately, so that drift of the machine shows as disagreement
# between the two passes rather than as an overhead.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-2000}
rounds=${2:-7}
bin=target/release
url=${OEMPUTX_TEST_AMQP:-amqp://guest:guest@127.0.0.1:5672/%2f}
db=${OEMPUTX_TEST_PG:-postgres://postgres:postgres@127.0.0.1:5432/postgres}
out=${OUT:-reports/stats-overhead}
mkdir -p "$out"
. ci/flow.sh
table="oemputx_stats_$$"
# CPU-bound by default (commits not waiting for the disk, two instances and two tasks), as
# the project's gate runs; MODE=disk runs one task against commits that wait for the flush.
if [ "${MODE:-cpu}" = disk ]; then
  flow_opts=""; run_opts=""; instances=1
else
  flow_opts="--db-async-commit --threads 2"; run_opts="--tasks 2"; instances=2
fi
queue="oemputx.stats.$$"

run_level() { # level pass
  local level=$1 pass=$2
  start_flow "$out/flow-$level-$pass.log" "$instances" --url "$url" --input-queue "$queue" \
    --db "$db" --db-table "$table" $flow_opts --stats "$level" --stats-interval 5s \
    --stats-file "$out/flow-$level-$pass.jsonl"
  "$bin/oemputx" --qmgr "$url" --request-queue "$queue" --count "$count" --rounds "$rounds" \
    $run_opts --warmup 200 --group "FLOW=pid:$flow" --group QMGR=@rabbitmq --group DB=@postgresql \
    --quiet --no-save --export-json "$out/$level-$pass.json"
  kill -TERM "$flow"
  wait "$flow" || true
}

pass=1
for level in off thread node; do run_level "$level" $pass; done
pass=2
for level in node thread off; do run_level "$level" $pass; done
"$bin/oemputx" compare "$out/off-1.json" "$out/thread-1.json" "$out/node-1.json" \
  --export-markdown "$out/pass1.md"
"$bin/oemputx" compare "$out/off-2.json" "$out/thread-2.json" "$out/node-2.json" \
  --export-markdown "$out/pass2.md"
psql "$db" -qc "DROP TABLE IF EXISTS $table" >/dev/null 2>&1 || true
# The queue the flows declared (empty now); rabbitmqctl needs to run on the broker's host.
command -v rabbitmqctl >/dev/null && rabbitmqctl -q delete_queue "$queue" >/dev/null 2>&1 || true
