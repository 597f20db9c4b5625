#!/usr/bin/env bash
# The test command: starts (or installs) RabbitMQ and PostgreSQL when they are not running,
# brings up the two-node Slurm lab (ci/slurm-lab.sh; taken down on exit), then checks formatting and lints, runs every test, and ends with the project's own
# regression gate on the reference flow (ci/gate.sh). CI (.ci/run) calls exactly this.
#
# Every test target runs, and the gate too, whatever failed before them (cargo test
# --no-fail-fast: a failure in one target once hid every later one's results, issue 43).
# The integration tests are one binary (tests/it, a module per area), so a test that
# aborts the process (not a panic: an abort) takes that binary's other results with it;
# the unit tests and the benches' smoke runs are targets of their own. The script still
# exits non-zero when the tests or the gate failed, and its last lines say which.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's start, in seconds since the command began: where a slow run's time went.
stamp() { echo "ci/test.sh: [${SECONDS} s] $*"; }
. ci/ensure-rust.sh
stamp "services"
bash ci/services.sh
# The two-node Slurm lab for tests/it/slurm.rs (Slurm installed when absent; needs root, as CI
# is). A lab that fails to come up fails those tests under CI, never skips them.
# A lab that was already up is left up; one this script brought up is taken down on exit.
slurm_lab=0
if [ "$(id -u)" = 0 ] && ! bash ci/slurm-lab.sh status 2>/dev/null; then
  slurm_lab=1
  bash ci/slurm-lab.sh up || echo "ci/test.sh: the Slurm lab did not come up (bash ci/slurm-lab.sh up)"
fi
cargo fmt --all -- --check
# oemputx's tests start sample-flow, a crate of its own: build both binaries first.
stamp "building oemputx and sample-flow"
cargo build --workspace --bins --quiet
# The smallest broker build (docs/transports.md: cargo features), RabbitMQ alone, in
# release as a user would install it, in a target folder of its own so that the tests'
# binaries stay the default build's; warnings are errors, as clippy makes them above. It
# takes about 4 minutes from scratch, so it builds at low priority while the tests run
# (they must pass on a loaded host anyway) and is checked after them: it must run on the
# embedded queue manager and name the feature a left-out transport needs.
mkdir -p target/minimal
(RUSTFLAGS="-D warnings" CARGO_TARGET_DIR=target/minimal nice -n 10 \
  cargo build --release --no-default-features --features rabbitmq --quiet) \
  >target/minimal/build.log 2>&1 &
minimal_build=$!
# The gate's base (sample-flow at HEAD~1, a build of its own in target/gate-base) and clippy
# build beside the tests too, which wait on brokers and flows more than they use the CPU:
# built after them, the base added minutes to the test command. One job each (-j1), at the
# tests' own priority: at nice 10 beside four busy loops (load 4) the base starved, and
# the gate waited on it after the tests for longer than the tests took.
# The gate itself then runs beside the tests too: it counts instructions (callgrind), which
# the host's load does not move, with the binaries built above, which cargo test does not
# rebuild; after the tests it added about two minutes to the command.
mkdir -p target/gate-base
rm -f target/gate-base/gate.rc
(
  if CARGO_BUILD_JOBS=1 bash ci/gate.sh --build-base >target/gate-base/path 2>target/gate-base/build.log; then
    stamp "the gate's base is built: the gate runs beside the tests"
  else
    stamp "building the gate's base failed; the gate builds it itself:"
    cat target/gate-base/build.log
    : >target/gate-base/path
  fi
  code=0
  GATE_BASE_BIN=$(cat target/gate-base/path) bash ci/gate.sh >target/gate-base/gate.log 2>&1 || code=$?
  echo "$code" >target/gate-base/gate.rc
) >target/gate-base/base.log 2>&1 &
gate_job=$!
# Clippy (warnings are errors) in a target folder of its own, so that it holds no lock the
# tests' build waits on; its verdict is read after the tests.
mkdir -p target/clippy
(CARGO_TARGET_DIR=target/clippy \
  cargo clippy -j1 --workspace --all-targets --quiet -- -D warnings) >target/clippy/clippy.log 2>&1 &
clippy_check=$!
# An interrupted test command leaves no build behind it.
trap 'pkill -P "$gate_job" 2>/dev/null; kill "$minimal_build" "$gate_job" "$clippy_check" 2>/dev/null || true; [ "$slurm_lab" = 0 ] || bash ci/slurm-lab.sh down || true' EXIT
minimal_check() {
  local code=0
  if ! wait "$minimal_build"; then
    echo "ci/test.sh: cargo build --release --no-default-features --features rabbitmq FAILED:"
    cat target/minimal/build.log
    return 1
  fi
  target/minimal/release/oemputx --count 1000 --no-save --quiet >/dev/null || return 1
  target/minimal/release/oemputx --qmgr nats://127.0.0.1:4222 --no-save 2>target/minimal/nats.err || code=$?
  if [ "$code" -ne 2 ] || ! grep -q "built with the 'nats' feature" target/minimal/nats.err; then
    echo "ci/test.sh: the rabbitmq-only build did not refuse nats:// with exit 2 naming the feature (exit $code): $(cat target/minimal/nats.err)"
    return 1
  fi
  echo "ci/test.sh: the rabbitmq-only release build runs and names the feature nats:// needs"
}
# A missing service fails its tests here, never a skip (tests/support/src/live.rs).
tests=0
# Four test threads on two cores: the tests wait on brokers, flows and deadlines far more
# than they compute (the integration binary took 600 s with two threads and 466 s with four,
# all passing, on this 2-core machine); the tests that must not overlap hold locks of their
# own. RUST_TEST_THREADS set by the caller wins.
stamp "the tests"
OEMPUTX_LIVE=require RUST_TEST_THREADS=${RUST_TEST_THREADS:-4} \
  cargo test --workspace --all-targets --no-fail-fast 2>&1 || tests=$?
stamp "the tests ended; clippy"
clippy=0
if ! wait "$clippy_check"; then
  clippy=1
  cat target/clippy/clippy.log
fi
stamp "the regression gate (ci/gate.sh)"
wait "$gate_job" || true
cat target/gate-base/base.log target/gate-base/gate.log
gate=$(cat target/gate-base/gate.rc 2>/dev/null || echo 1)
stamp "the rabbitmq-only release build"
minimal=0
minimal_check || minimal=$?
stamp "done"
echo
if [ "$tests" -ne 0 ]; then
  echo "ci/test.sh: the tests FAILED (cargo test exit $tests): every failing test is listed above under 'failures:' by its module path (ladder::…, gate::…), and by target in cargo's last lines"
fi
if [ "$clippy" -ne 0 ]; then
  echo "ci/test.sh: cargo clippy --workspace --all-targets -- -D warnings FAILED (its findings are above)"
fi
if [ "$gate" -ne 0 ]; then
  echo "ci/test.sh: the regression gate FAILED (ci/gate.sh exit $gate)"
fi
if [ "$minimal" -ne 0 ]; then
  echo "ci/test.sh: the rabbitmq-only release build FAILED (see above)"
fi
if [ "$tests" -ne 0 ] || [ "$clippy" -ne 0 ] || [ "$gate" -ne 0 ] || [ "$minimal" -ne 0 ]; then
  exit 1
fi
echo "ci/test.sh: all tests and the regression gate passed"
