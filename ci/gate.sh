#!/usr/bin/env bash
# The project's own regression gate: the reference flow (sample-flow with PostgreSQL) on the
# local RabbitMQ, driven by oemputx in rounds and gated against the committed baseline.
#
#   bash ci/gate.sh                   # gate this build against ci/baseline.json
#   bash ci/gate.sh --save-baseline   # measure and write ci/baseline.json (on main)
#
# It uses the debug binaries the test command builds (OEMPUTX_BIN=target/release for a
# release build; the baseline must come from the same kind of build). Settings, chosen from
# the false-alarm and power measurements in ci/gate-calibrate.sh: GATE_COUNT messages per
# round, GATE_ROUNDS rounds, tolerances in ci/gate.toml. GATE_EXTRA_CPU_US makes the flow burn
# that much more CPU per message: a controlled regression, for calibrating the gate.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${OEMPUTX_BIN:-target/debug}
count=${GATE_COUNT:-1500}
rounds=${GATE_ROUNDS:-10}
extra=${GATE_EXTRA_CPU_US:-0}
baseline=${GATE_BASELINE:-ci/baseline.json}
url=${OEMPUTX_TEST_AMQP:-amqp://guest:guest@127.0.0.1:5672/%2f}
db=${OEMPUTX_TEST_PG:-postgres://postgres:postgres@127.0.0.1:5432/postgres}
queue="oemputx.gate.$$"
table="oemputx_gate_$$"
log=$(mktemp)
flow=

cleanup() {
  if [ -n "$flow" ]; then kill -TERM "$flow" 2>/dev/null || true; wait "$flow" 2>/dev/null || true; fi
  psql "$db" -qc "DROP TABLE IF EXISTS $table" >/dev/null 2>&1 || true
  command -v rabbitmqctl >/dev/null && rabbitmqctl -q delete_queue "$queue" >/dev/null 2>&1 || true
  rm -f "$log"
}
trap cleanup EXIT

# A baseline is only as portable as the machine: on another kind of CPU the gate would judge
# the hardware, not the change. There it says so and stops (make a baseline on that machine).
if [ "${1:-}" != "--save-baseline" ] && [ -f "$baseline" ]; then
  here="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') x $(nproc)"
  there=$(python3 -c "import json,sys; h=json.load(open(sys.argv[1]))['host']; print(f\"{h.get('cpu_model')} x {h.get('cpus')}\")" "$baseline" 2>/dev/null || echo unknown)
  if [ "$here" != "$there" ]; then
    echo "gate: $baseline was measured on '$there', this machine is '$here': not comparable, skipping." >&2
    echo "gate: make a baseline here with: bash ci/gate.sh --save-baseline" >&2
    exit 0
  fi
fi

# --db-async-commit and two tasks keep the run CPU-bound: waiting on the disk's flush (about
# 1 ms a commit here, and variable) made every group's CPU per message swing by 20-40% from
# run to run, as idle CPU was spread over fewer messages.
. ci/flow.sh
start_flow "$log" 2 --url "$url" --input-queue "$queue" --db "$db" --db-table "$table" \
  --db-async-commit --threads 2 --extra-cpu-us "$extra"

run=(--qmgr "$url" --request-queue "$queue" --count "$count" --rounds "$rounds" --warmup 100 --tasks 2
  --group "FLOW=pid:$flow" --group QMGR=@rabbitmq --group DB=@postgresql
  --label gate --no-save --quiet)
if [ "${1:-}" = "--save-baseline" ]; then
  "$bin/oemputx" "${run[@]}" --save-baseline "$baseline"
  echo "gate: wrote $baseline"
else
  "$bin/oemputx" gate --baseline "$baseline" --gate-file ci/gate.toml "$@" -- "${run[@]}"
fi
