#!/usr/bin/env bash
# The test command: starts (or installs) RabbitMQ and PostgreSQL when they are not running,
# then checks formatting and lints, runs every test, and ends with the project's own
# regression gate on the reference flow (ci/gate.sh). CI (.ci/run) calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/ensure-rust.sh
bash ci/services.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
# oemputx's tests start sample-flow, a crate of its own: build both binaries first.
cargo build --workspace --bins --quiet
# A missing service fails its tests here, never a skip (tests/support/src/live.rs).
OEMPUTX_LIVE=require cargo test --workspace --all-targets 2>&1
bash ci/gate.sh
