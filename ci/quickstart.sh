#!/usr/bin/env bash
# The first command of the README: build oemputx and run it on the embedded queue manager
# (nothing else to install). Extra arguments go to oemputx, e.g. ci/quickstart.sh --count 5000.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/ensure-rust.sh
if [ "$#" -eq 0 ]; then set -- --count 1000; fi
exec cargo run --quiet --release --bin oemputx -- "$@"
