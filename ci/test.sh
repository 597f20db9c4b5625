#!/usr/bin/env bash
# The test command: starts (or installs) RabbitMQ and PostgreSQL when they are not running,
# then checks formatting and lints, runs every test, and ends with the project's own
# regression gate on the reference flow (ci/gate.sh). CI (.ci/run) calls exactly this.
#
# Every test file runs, and the gate too, whatever failed before them: a failure in one
# test binary stopped cargo and hid every later file's results (issue 43). The script
# still exits non-zero when the tests or the gate failed, and its last lines say which.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/ensure-rust.sh
bash ci/services.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
# oemputx's tests start sample-flow, a crate of its own: build both binaries first.
cargo build --workspace --bins --quiet
# The smallest broker build (docs/transports.md: cargo features), RabbitMQ alone, in a
# target folder of its own so that the tests' binaries stay the default build's; warnings
# are errors, as clippy makes them above (about a minute from scratch). It must run on the
# embedded queue manager and name the feature a left-out transport needs.
RUSTFLAGS="-D warnings" CARGO_TARGET_DIR=target/minimal \
  cargo build --no-default-features --features rabbitmq --quiet
target/minimal/debug/oemputx --count 1000 --no-save --quiet
minimal=0
target/minimal/debug/oemputx --qmgr nats://127.0.0.1:4222 --no-save 2>target/minimal/nats.err || minimal=$?
if [ "$minimal" -ne 2 ] || ! grep -q "built with the 'nats' feature" target/minimal/nats.err; then
  echo "ci/test.sh: the rabbitmq-only build did not refuse nats:// with exit 2 naming the feature (exit $minimal): $(cat target/minimal/nats.err)"
  exit 1
fi
# A missing service fails its tests here, never a skip (tests/support/src/live.rs).
tests=0
OEMPUTX_LIVE=require cargo test --workspace --all-targets --no-fail-fast 2>&1 || tests=$?
gate=0
bash ci/gate.sh || gate=$?
echo
if [ "$tests" -ne 0 ]; then
  echo "ci/test.sh: the tests FAILED (cargo test exit $tests): every failing test is listed above, under 'failures:' in its file's section, and by file in cargo's last lines"
fi
if [ "$gate" -ne 0 ]; then
  echo "ci/test.sh: the regression gate FAILED (ci/gate.sh exit $gate)"
fi
if [ "$tests" -ne 0 ] || [ "$gate" -ne 0 ]; then
  exit 1
fi
echo "ci/test.sh: all tests and the regression gate passed"
