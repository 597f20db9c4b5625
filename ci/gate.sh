#!/usr/bin/env bash
# The project's own regression gate on the reference flow (sample-flow with PostgreSQL on the
# local RabbitMQ).
#
#   bash ci/gate.sh                   # instruction counts: sample-flow built from GATE_BASE
#                                     #   (default HEAD~1) against this checkout's, under callgrind
#   bash ci/gate.sh --ab              # A/B on CPU time: the same two builds in alternating rounds
#   bash ci/gate.sh --stored          # this build against the committed ci/baseline.json
#   bash ci/gate.sh --save-baseline   # measure and append to ci/baseline.json (on main)
#   bash ci/gate.sh --build-base      # only build the base's sample-flow; print its path
#
# GATE_BASE_BIN names a base sample-flow already built. The base is built in a target folder
# of its own, target/gate-base (GATE_BASE_TARGET), first seeded with hard links to the
# dependencies this checkout has built: only oemputx's library and sample-flow at the base
# are compiled, and this checkout's target/debug is never written to, so the base can build
# beside the tests (ci/test.sh does, then runs the gate there too). When nothing sample-flow
# is built from differs between the base and this tree, the base is this checkout's own
# build: nothing is built, and the gate compares the binary with itself.
#
# Instruction counts are the default: they do not move with the machine's load, so the gate
# decides in one run what CPU time decides only some of the time in CI's minutes (docs/gate.md
# has both calibrations). They see the flow alone; --ab also sees the broker and database.
# The base is built from git history into target/gate-base (a worktree under target/,
# removed afterwards); without history (a shallow clone, a first commit) the gate says so
# and falls back to --stored.
#
# It uses the debug binaries the test command builds (OEMPUTX_BIN=target/release for a
# release build; the base is then built the same way). Instruction counts: GATE_COUNT
# messages (default 200: the debug build costs about 1.1 M instructions a message, 25 ms
# under valgrind), GATE_RUNS per side (default 3), GATE_TOLERANCE (default 1%).
# A/B: GATE_COUNT messages per round (default 1500), GATE_MAX_TIME and GATE_MAX_ROUNDS
# (default 4m, 400), GATE_TOLERANCE (default 2%).
# GATE_EXTRA_WORK (instructions) or GATE_EXTRA_CPU_US (--ab, --stored) makes this checkout's
# flow do that much more per message: a controlled regression, to see the gate catch one.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${OEMPUTX_BIN:-target/debug}
count=${GATE_COUNT:-}
rounds=${GATE_ROUNDS:-10}
extra=${GATE_EXTRA_CPU_US:-0}
extra_work=${GATE_EXTRA_WORK:-0}
baseline=${GATE_BASELINE:-ci/baseline.json}
url=${OEMPUTX_TEST_AMQP:-amqp://guest:guest@127.0.0.1:5672/%2f}
db=${OEMPUTX_TEST_PG:-postgres://postgres:postgres@127.0.0.1:5432/postgres}
mode=instructions
case "${1:-}" in
  --ab) mode=ab; shift ;;
  --stored) mode=stored; shift ;;
  --save-baseline) mode=save ;;
  --build-base) mode=build-base; shift ;;
esac
group_opts=(--group QMGR=@rabbitmq --group DB=@postgresql)
table="oemputx_gate_$$"
tables=("${table}" "${table}_a" "${table}_b")
cleanup_tables() {
  for t in "${tables[@]}"; do psql "$db" -qc "DROP TABLE IF EXISTS $t" >/dev/null 2>&1 || true; done
}

# --db-async-commit and two tasks keep the run CPU-bound: waiting on the disk's flush (about
# 1 ms a commit here, and variable) made every group's CPU per message swing by 20-40% from
# run to run, as idle CPU was spread over fewer messages.
flow_opts="--db $db --db-async-commit --threads 2"

# The base's sample-flow, built from git history into target/gate-base; prints its path, or
# nothing when this clone has no such commit.
build_base() {
  if [ -n "${GATE_BASE_BIN:-}" ]; then
    [ -x "$GATE_BASE_BIN" ] && { echo "$GATE_BASE_BIN"; return 0; }
    echo "gate: GATE_BASE_BIN=$GATE_BASE_BIN is no executable; building the base here" >&2
  fi
  local base
  base=$(git rev-parse --verify -q "${GATE_BASE:-HEAD~1}^{commit}" 2>/dev/null) || return 0
  local profile=() dir=target/debug
  if [ "$bin" = target/release ]; then profile=(--release); dir=target/release; fi
  if git diff --quiet "$base" -- Cargo.toml Cargo.lock src sample-flow .cargo rust-toolchain.toml 2>/dev/null; then
    echo "gate: the base $(git log -1 --format=%h "$base") builds sample-flow from the same sources as this tree: its build is this one's" >&2
    echo "$bin/sample-flow"
    return 0
  fi
  local into=${GATE_BASE_TARGET:-target/gate-base}
  bash ci/seed-target.sh "$dir" "$into/${dir#target/}"
  # The base's source outside this tree (cargo would take it for a member of this
  # workspace), its build in target/gate-base (kept: the next run reuses it).
  local wt
  wt=$(mktemp -d)/base
  git worktree add --detach -q "$wt" "$base"
  echo "gate: building sample-flow at the base, $(git log -1 --format='%h %s' "$base")" >&2
  # Only sample-flow's binary (oemputx's binary is not the base's to measure), with every
  # member's features as this checkout's `--workspace --bins` build resolves them, so the
  # seeded dependencies are fresh; not incremental (a build from scratch, kept small), and
  # not through clippy-driver (the lints are this checkout's).
  (cd "$wt" && env -u RUSTC_WORKSPACE_WRAPPER CARGO_INCREMENTAL=0 CARGO_TARGET_DIR="$OLDPWD/$into" \
    cargo build -q "${profile[@]}" --workspace --bin sample-flow) >&2
  git worktree remove --force "$wt" >/dev/null 2>&1 || true
  echo "$into/${dir#target/}/sample-flow"
}

no_base() {
  echo "gate: no base commit ${GATE_BASE:-HEAD~1} in this clone (shallow, or the first commit): gating against $baseline instead" >&2
}

instructions() {
  local base_bin
  base_bin=$(build_base)
  [ -n "$base_bin" ] || { no_base; stored "$@"; return; }
  trap cleanup_tables EXIT
  # One thread and one task: each message then wakes the flow alone, and its instruction
  # count is the same from run to run (docs/gate.md).
  local opts="--db $db --db-async-commit --threads 1"
  # Only when asked: an option more on B's command line alone costs its parsing, 0.9 % of
  # the debug build's cold start, close to the tolerance.
  local work_opt=""
  [ "$extra_work" = 0 ] || work_opt=" --extra-work $extra_work"
  "$bin/oemputx" gate --instructions --runs "${GATE_RUNS:-3}" \
    --flow-a "$base_bin $opts --db-table ${table}_a" \
    --flow-b "$bin/sample-flow $opts --db-table ${table}_b$work_opt" \
    --tolerance "${GATE_TOLERANCE:-1%}" "$@" \
    -- --qmgr "$url" --count "${count:-200}" --tasks 1
}

ab() {
  local base_bin
  base_bin=$(build_base)
  [ -n "$base_bin" ] || { no_base; stored "$@"; return; }
  trap cleanup_tables EXIT
  "$bin/oemputx" gate \
    --flow-a "$base_bin $flow_opts --db-table ${table}_a" \
    --flow-b "$bin/sample-flow $flow_opts --db-table ${table}_b --extra-cpu-us $extra" \
    --tolerance "${GATE_TOLERANCE:-2.5%}" --max-time "${GATE_MAX_TIME:-4m}" \
    --max-rounds "${GATE_MAX_ROUNDS:-400}" "$@" \
    -- --qmgr "$url" --count "${count:-1500}" --warmup 100 --tasks 2 "${group_opts[@]}"
}

stored() {
  # A baseline is only as portable as the machine: on another kind of CPU the gate would judge
  # the hardware, not the change. There it says so and stops (make a baseline on that machine).
  if [ -f "$baseline" ]; then
    here="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') x $(nproc)"
    there=$(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); h=(j['runs'][-1] if 'runs' in j else j)['host']; print(f\"{h.get('cpu_model')} x {h.get('cpus')}\")" "$baseline" 2>/dev/null || echo unknown)
    if [ "$here" != "$there" ]; then
      echo "gate: $baseline was measured on '$there', this machine is '$here': not comparable, skipping." >&2
      echo "gate: make a baseline here with: bash ci/gate.sh --save-baseline" >&2
      return 0
    fi
  fi
  measured_run gate --baseline "$baseline" --gate-file ci/gate.toml "$@" --
}

# One flow of this checkout, driven in rounds: for --stored and --save-baseline.
measured_run() {
  local log queue="oemputx.gate.$$"
  log=$(mktemp)
  . ci/flow.sh
  start_flow "$log" 2 --url "$url" --input-queue "$queue" $flow_opts --db-table "$table" \
    --extra-cpu-us "$extra"
  trap 'kill -TERM '"$flow"' 2>/dev/null || true; wait '"$flow"' 2>/dev/null || true; cleanup_tables;
    command -v rabbitmqctl >/dev/null && rabbitmqctl -q delete_queue '"$queue"' >/dev/null 2>&1 || true; rm -f '"$log" EXIT
  local run=(--qmgr "$url" --request-queue "$queue" --count "${count:-1500}" --rounds "$rounds" --warmup 100
    --tasks 2 --group "FLOW=pid:$flow" "${group_opts[@]}" --label gate --no-save --quiet)
  if [ "$1" = save ]; then
    "$bin/oemputx" "${run[@]}" --save-baseline "$baseline"
    echo "gate: appended this run to main's history in $baseline"
  else
    "$bin/oemputx" "$@" "${run[@]}"
  fi
}

case $mode in
  instructions) instructions "$@" ;;
  ab) ab "$@" ;;
  stored) stored "$@" ;;
  save) measured_run save ;;
  build-base) build_base ;;
esac
