#!/usr/bin/env bash
# The driver's floor (issue 18): the loop-overhead bench with a minimal synchronous C client
# on librabbitmq (benches/c/amqp_floor.c) beside the raw amqprs loops and oemputx,
# interleaved, fresh processes per round. Installs librabbitmq-dev and a C compiler when
# missing, starts RabbitMQ if needed (ci/services.sh), then runs
#   cargo bench --bench loop_overhead -- --rounds R --count N --tasks T
# Usage: bash lab/floor-bench.sh [ROUNDS=21] [COUNT=5000] [TASKS=1,8]
set -euo pipefail
cd "$(dirname "$0")/.."
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
if ! { command -v cc >/dev/null && [ -f /usr/include/amqp.h ]; }; then
  echo "floor-bench: installing librabbitmq-dev and gcc" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    librabbitmq-dev gcc libc6-dev >/dev/null
fi
bash ci/services.sh
cargo bench --bench loop_overhead -- --rounds "${1:-21}" --count "${2:-5000}" --tasks "${3:-1,8}"
