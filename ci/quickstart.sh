#!/usr/bin/env bash
# The first command of the README: build oemputx and run it on the embedded queue manager
# (nothing else to install). Extra arguments go to oemputx, e.g. ci/quickstart.sh --count 5000 --tasks 2.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/ensure-rust.sh
# 500,000 round trips last about a second here (the embedded queue manager's responder and
# the task share one CPU: a hand-off is a context switch, about 2 us): long enough for
# /proc/stat's idle ticks to give a capture ratio worth printing (at 20,000 the window is
# ~45 ms and the ratio is noise). In five rounds of 100,000, so that the report says how
# repeatable its figures are (the rounds' best, median, worst and spread per group).
if [ "$#" -eq 0 ]; then set -- --count 100000 --rounds 5; fi
exec cargo run --quiet --release --bin oemputx -- "$@"
