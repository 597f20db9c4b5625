#!/usr/bin/env bash
# The statistics overhead experiment of the broker paper, as one live compare: the reference
# flow with its own accounting and statistics off, per thread and per node, each setting an
# arm measured in interleaved rounds in one window (oemputx compare --setting), each group's
# median [95% CI] per setting, each change against `off` with its paired interval, and the
# Total Overhead %.
#
#   bash lab/stats-overhead.sh [COUNT] [MAX_TIME]      (defaults 2000 and 10m; MODE=disk, see below)
#
# Needs RabbitMQ and PostgreSQL (bash ci/services.sh) and a release build
# (cargo build --release --workspace --bins); OEMPUTX_BIN overrides where the binaries are.
# Writes $OUT (reports/stats-overhead by default): the text, JSON (oemputx.compare/1),
# Markdown and TSV of the comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-2000}
max_time=${2:-10m}
bin=${OEMPUTX_BIN:-target/release}
url=${OEMPUTX_TEST_AMQP:-amqp://guest:guest@127.0.0.1:5672/%2f}
db=${OEMPUTX_TEST_PG:-postgres://postgres:postgres@127.0.0.1:5432/postgres}
out=${OUT:-reports/stats-overhead}
mkdir -p "$out"
table="oemputx_stats_$$"
trap 'psql "$db" -qc "DROP TABLE IF EXISTS $table" >/dev/null 2>&1 || true' EXIT
# CPU-bound by default (commits not waiting for the disk, two threads and two tasks), as
# the project's gate runs; MODE=disk runs one task against commits that wait for the flush.
if [ "${MODE:-cpu}" = disk ]; then
  flow_opts="--threads 1"; tasks=1
else
  flow_opts="--db-async-commit --threads 2"; tasks=2
fi
"$bin/oemputx" compare --flow-cmd "$bin/sample-flow --db $db --db-table $table $flow_opts" \
  --setting off="--stats off" --setting thread="--stats thread" --setting node="--stats node" \
  --max-time "$max_time" --export-json "$out/stats-overhead.json" \
  --export-markdown "$out/stats-overhead.md" --export-tsv "$out/stats-overhead.tsv" \
  -- --qmgr "$url" --count "$count" --warmup 200 --tasks "$tasks" \
  --group QMGR=@rabbitmq --group DB=@postgresql | tee "$out/stats-overhead.txt"
