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
# A broker exported for oemputx in the calling shell is not the tests': they mean the embedded one
# unless they name another.
unset OEMPUTX_QMGR
cd "$(dirname "$0")/.."
# Each phase's start, in seconds since the command began: where a slow run's time went.
stamp() { echo "ci/test.sh: [${SECONDS} s] $*"; }
. ci/ensure-rust.sh
stamp "services"
bash ci/services.sh
# The host as it is now (ci/build-jobs.sh), read before the Slurm lab starts beside the
# build: quiet, and cargo picks its jobs (one a CPU); or loaded (other tasks already fill
# every CPU), and the build runs four jobs a CPU. The builds beside the tests later run with
# the caller's jobs or cargo's again.
caller_jobs=${CARGO_BUILD_JOBS-}
read -r build_jobs host_state < <(bash ci/build-jobs.sh)
loaded=0
if [ "$host_state" = loaded ]; then loaded=1; fi
if [[ "$build_jobs" =~ ^[0-9]+$ ]]; then export CARGO_BUILD_JOBS=$build_jobs; fi
stamp "the host is $host_state: cargo builds with ${build_jobs} jobs ($(nproc) CPUs)"
# An interrupted test command leaves no build, gate or lab behind it.
other_tests=""
gate_job=""
minimal_build=""
slurm_lab=0
slurm_job=""
trap '[ -z "$gate_job" ] || pkill -P "$gate_job" 2>/dev/null || true; [ -z "$other_tests" ] || pkill -P "$other_tests" 2>/dev/null || true; kill $minimal_build $gate_job $other_tests 2>/dev/null || true; [ -z "$slurm_job" ] || wait "$slurm_job" 2>/dev/null || true; [ "$slurm_lab" = 0 ] || bash ci/slurm-lab.sh down || true' EXIT
# The two-node Slurm lab for tests/it/slurm.rs (Slurm installed when absent; needs root, as CI
# is). A lab that fails to come up fails those tests under CI, never skips them.
# A lab that was already up is left up; one this script brought up is taken down on exit.
# It comes up beside the builds and is waited for before the tests: with the services it
# took 76 s of a load-4 run (11 s quiet) in front of everything (its rabbitmqctl calls
# each start an Erlang VM).
mkdir -p target
if [ "$(id -u)" = 0 ] && ! bash ci/slurm-lab.sh status 2>/dev/null; then
  slurm_lab=1
  (bash ci/slurm-lab.sh up || echo "ci/test.sh: the Slurm lab did not come up (bash ci/slurm-lab.sh up)") \
    >target/slurm-lab.log 2>&1 &
  slurm_job=$!
fi
cargo fmt --all -- --check
mkdir -p target/gate-base
rm -f target/gate-base/gate.rc target/gate-base/path
# Clippy lints as the workspace's crates compile (clippy-driver is rustc with clippy's
# lints): one build serves the tests and the lints, where a `cargo clippy` of its own
# checked every dependency and crate a second time. Its warnings are counted below, after
# the tests have run, so that a lint does not hide the tests' results.
clippy_driver=$(command -v clippy-driver || true)
if [ -z "$clippy_driver" ]; then
  rustup component add clippy >&2 || true
  clippy_driver=$(command -v clippy-driver || true)
fi
[ -n "$clippy_driver" ] && export RUSTC_WORKSPACE_WRAPPER="$clippy_driver"
# One cargo builds the binaries and every test target, so that the test targets' own
# dependencies and the unit tests' library compile beside the library the binaries link,
# where a build of the binaries first left one CPU idle under the library's long
# single-threaded compile and then built the test targets after it (2 min 7 s of a quiet
# fresh clone's 4 min 33 s of building).
# The artifacts as JSON on stdout (the integration binary's path), the diagnostics rendered
# on stderr for the log and clippy's count.
# Under CI (a fresh clone, built once) without incremental compilation: its caches are never
# read again there, and writing them cost more CPU on the workspace's crates
# (95-110 s against 112-124 s of a quiet build of them, two of each).
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}; fi
tests=0
stamp "building oemputx, sample-flow and the tests (with clippy's lints)"
mkdir -p target/clippy
cargo test --workspace --all-targets --no-run --message-format=json-render-diagnostics \
  2>&1 >target/clippy/artifacts.json | tee target/clippy/build.log || tests=$?
# oemputx's tests start sample-flow, a crate of its own whose binary cargo test builds only
# as its unit tests: its binary too (the dependencies are built; a few seconds).
cargo build --workspace --bins 2>&1 | tee -a target/clippy/build.log
# The gate's base, sample-flow at HEAD~1 (ci/gate.sh --build-base): in a target folder of its
# own seeded with the dependencies just built, only oemputx's library and sample-flow at the
# base compile (27 to 32 s quiet), and this checkout's target/debug is not written to.
# On a quiet host it is built here, alone and at once. (Built first, in this target folder,
# it put a minute in front of every build; beside the quiet host's tests it starved them
# and itself: 3 min for its 32 s, the tests 2 min longer, d6536a7; compiling every
# dependency a second time beside them, stop 65, it ended after them.)
# On a loaded host it is built beside the tests, first thing in the gate's job (below): alone
# here it is one job at a time (the library, then sample-flow), which beside four busy loops
# gets a fifth of the two CPUs (64 to 101 s for its 27 s of CPU), where beside the tests it
# only adds its CPU to theirs.
# Its path in target/gate-base/path; on a failure its log and a word on stdout, and no path
# (the gate then builds it itself).
build_gate_base() {
  bash ci/gate.sh --build-base >target/gate-base/path 2>target/gate-base/build.log && return 0
  rm -f target/gate-base/path
  cat target/gate-base/build.log
  echo "ci/test.sh: building the gate's base failed; the gate will try again itself"
}
if [ "$loaded" = 0 ]; then
  stamp "building the gate's base"
  build_gate_base
fi
# What builds beside the tests (the gate's base on a loaded host, the smallest build) takes
# the caller's jobs or cargo's: rustc's code generation takes a thread for each job it is
# given, and these build beside timing tests.
if [ -n "$caller_jobs" ]; then export CARGO_BUILD_JOBS=$caller_jobs; else unset CARGO_BUILD_JOBS; fi
# The Slurm lab is up before the gate and the tests start: its rabbitmqctl calls change the
# shared broker (a listener, a user), and the gate's administrative calls have 2 s each.
if [ -n "$slurm_job" ]; then
  wait "$slurm_job" || true
  slurm_job=""
  cat target/slurm-lab.log
fi
# The regression gate runs beside the tests: it counts instructions (callgrind), which the
# host's load does not move, with the binaries built above and the base (on a loaded host
# built here first, its path kept for a second try after the tests); after the tests it
# added about two minutes to the command.
(
  code=0
  : >target/gate-base/gate.log
  if [ "$loaded" = 1 ]; then build_gate_base >>target/gate-base/gate.log; fi
  GATE_BASE_BIN=$(cat target/gate-base/path 2>/dev/null) bash ci/gate.sh >>target/gate-base/gate.log 2>&1 || code=$?
  echo "$code" >target/gate-base/gate.rc
) &
gate_job=$!
# The smallest broker build (docs/transports.md: cargo features), RabbitMQ alone, in a
# target folder of its own so that the tests' binaries stay the default build's; warnings
# are errors. A debug build with one job beside the tests (they must pass on a loaded host
# anyway), checked after them: it must run on the embedded queue manager and name the
# feature a left-out transport needs. (Built in release it took longer than the tests
# beside them; what it checks is the features, not the optimiser. At nice 10 beside four
# busy loops it was still compiling its dependencies when the tests ended.)
# Seeded with the dependencies built above, with warnings denied by a workspace wrapper rather
# than RUSTFLAGS (which would change every dependency's fingerprint): 45 crates of 165
# compile, those whose features differ (75 s of CPU instead of 120).
mkdir -p target/minimal
bash ci/seed-target.sh target/debug target/minimal/debug
(RUSTC_WORKSPACE_WRAPPER="$PWD/ci/deny-warnings.sh" CARGO_INCREMENTAL=0 CARGO_TARGET_DIR=target/minimal CARGO_BUILD_JOBS=1 \
  cargo build --no-default-features --features rabbitmq --quiet) \
  >target/minimal/build.log 2>&1 &
minimal_build=$!
minimal_check() {
  local code=0
  if ! wait "$minimal_build"; then
    echo "ci/test.sh: cargo build --no-default-features --features rabbitmq FAILED:"
    cat target/minimal/build.log
    return 1
  fi
  target/minimal/debug/oemputx --count 1000 --no-save --quiet >/dev/null || return 1
  target/minimal/debug/oemputx --qmgr nats://127.0.0.1:4222 --no-save 2>target/minimal/nats.err || code=$?
  if [ "$code" -ne 2 ] || ! grep -q "built with the 'nats' feature" target/minimal/nats.err; then
    echo "ci/test.sh: the rabbitmq-only build did not refuse nats:// with exit 2 naming the feature (exit $code): $(cat target/minimal/nats.err)"
    return 1
  fi
  code=0
  target/minimal/debug/oemputx --qmgr kafka://u:hunter2@127.0.0.1:19092 --no-save 2>target/minimal/kafka.err || code=$?
  if [ "$code" -ne 2 ] || ! grep -q "built with the 'kafka' feature" target/minimal/kafka.err ||
    grep -q hunter2 target/minimal/kafka.err; then
    echo "ci/test.sh: the rabbitmq-only build did not refuse kafka:// with exit 2 naming the feature, password masked (exit $code): $(cat target/minimal/kafka.err)"
    return 1
  fi
  echo "ci/test.sh: the rabbitmq-only build runs and names the features nats:// and kafka:// need"
}
# A missing service fails its tests here, never a skip (tests/support/src/live.rs).
# Four test threads on two cores: the tests wait on brokers, flows and deadlines far more
# than they compute (the integration binary took 600 s with two threads and 466 s with four,
# all passing, on this 2-core machine); the tests that must not overlap hold locks of their
# own. RUST_TEST_THREADS set by the caller wins.
it_bin=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try:
        a = json.loads(line)
    except ValueError:
        continue
    if a.get("reason") == "compiler-artifact" and a["target"]["name"] == "it" and a.get("executable"):
        print(a["executable"])
' target/clippy/artifacts.json | tail -1)
stamp "the tests"
# The integration binary (tests/it, most of the suite's time) runs beside the other targets
# (the unit tests, the benches' smoke runs, sample-flow's and the support crate's), which
# cargo would run one after the other before and after it: about 40 s off the command.
# It runs as cargo runs it: from the package's folder, finding the binaries it starts in
# the target folder it sits in.
(
  code=0
  OEMPUTX_LIVE=require cargo test --workspace --lib --bins --benches --no-fail-fast \
    >target/clippy/other-tests.log 2>&1 || code=$?
  echo "$code" >target/clippy/other-tests.rc
) &
other_tests=$!
if [ -n "$it_bin" ] && [ -x "$it_bin" ]; then
  echo "     Running tests/it/main.rs ($it_bin)"
  OEMPUTX_LIVE=require RUST_TEST_THREADS=${RUST_TEST_THREADS:-4} "$it_bin" 2>&1 || tests=$?
else
  echo "ci/test.sh: the integration tests' binary was not built (target/clippy/artifacts.json names none)"
  tests=1
fi
wait "$other_tests" || true
cat target/clippy/other-tests.log
other=$(cat target/clippy/other-tests.rc 2>/dev/null || echo 1)
[ "$other" = 0 ] || tests=$other
stamp "the tests ended; the regression gate (ci/gate.sh)"
# Clippy's verdict: any warning in the workspace's crates (cargo says "generated N
# warnings" for each; dependencies' lints are capped), as `cargo clippy -- -D warnings`.
clippy=0
if [ -z "$clippy_driver" ]; then
  clippy=1
  echo "ci/test.sh: clippy-driver not found (rustup component add clippy)"
elif grep -E "generated [0-9]+ warnings?" target/clippy/build.log; then
  clippy=1
  grep -E -B2 -A12 "^(warning|error)" target/clippy/build.log | head -200
fi
wait "$gate_job" || true
cat target/gate-base/gate.log
gate=$(cat target/gate-base/gate.rc 2>/dev/null || echo 1)
# A gate that could not measure beside the tests (exit 1: at load 4 RabbitMQ answered
# neither its consumer counts nor its flow's connection in time) measures again after them,
# on a quieter broker; a regression (3) or a pass stands.
if [ "$gate" = 1 ]; then
  stamp "the gate could not measure beside the tests: again after them"
  gate=0
  GATE_BASE_BIN=$(cat target/gate-base/path 2>/dev/null) bash ci/gate.sh || gate=$?
fi
stamp "the rabbitmq-only build"
minimal=0
minimal_check || minimal=$?
stamp "done"
echo
if [ "$tests" -ne 0 ]; then
  echo "ci/test.sh: the tests FAILED (cargo test exit $tests): every failing test is listed above under 'failures:' by its module path (ladder::…, gate::…), and by target in cargo's last lines"
fi
if [ "$clippy" -ne 0 ]; then
  echo "ci/test.sh: clippy's lints (cargo clippy --workspace --all-targets -- -D warnings) FAILED (its findings are above)"
fi
if [ "$gate" -ne 0 ]; then
  echo "ci/test.sh: the regression gate FAILED (ci/gate.sh exit $gate)"
fi
if [ "$minimal" -ne 0 ]; then
  echo "ci/test.sh: the rabbitmq-only build FAILED (see above)"
fi
if [ "$tests" -ne 0 ] || [ "$clippy" -ne 0 ] || [ "$gate" -ne 0 ] || [ "$minimal" -ne 0 ]; then
  exit 1
fi
echo "ci/test.sh: all tests and the regression gate passed"
