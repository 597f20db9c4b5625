#!/usr/bin/env bash
# The first command of the README: build oemputx and run it on the embedded queue manager
# (nothing else to install). Extra arguments go to oemputx, e.g. ci/quickstart.sh --count 5000 --tasks 2.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/ensure-rust.sh
# 20,000 round trips last about a second here: long enough for /proc/stat's 10 ms idle ticks to
# give a capture ratio worth printing (at 1,000 the window is ~40 ms and the ratio is noise).
# In five rounds of 4,000, so that the report says how repeatable its figures are (the
# rounds' best, median, worst and spread per group): on a shared machine they are not.
if [ "$#" -eq 0 ]; then set -- --count 4000 --rounds 5; fi
exec cargo run --quiet --release --bin oemputx -- "$@"
