#!/usr/bin/env bash
# The capture ratio and the host's load on a shared host (docs/accounting.md, "The capture
# ratio on a shared host"): the quick start three times beside each load this host's users
# run — none, a shell loop of short processes, a compile, a CPU-bound loop, and the shell
# loop again with the cgroup mounts hidden so that the process-sum fallback is used. One
# line a run: ratio, source, interrupts, steal, unaccounted, host state, other CPUs, rate.
# Every load is started here and stopped before the next case; nothing leaves the machine.
# Usage: bash lab/shared-host.sh [RUNS_PER_CASE]   (release build: cargo build --release)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
bin=target/release/oemputx
[ -x "$bin" ] || cargo build --release --quiet --bin oemputx
work=$(mktemp -d)
load=""
cleanup() { [ -n "$load" ] && kill "$load" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
python3 -c "print(''.join(f'int f{i}(int x){{int s=0;for(int j=0;j<x;j++)s+=j*{i}%7;return s;}}\n' for i in range(300)))" >"$work/load.c"

measure() {
  local label=$1; shift
  for _ in $(seq "$runs"); do
    "$@" "$bin" --count 100000 --rounds 5 --quiet --no-save --export-json - 2>/dev/null |
      python3 -c "
import json, sys
j = json.load(sys.stdin); r = j['capture_ratio']; h = j['accounting']['host_load']
print('$label', '%.3f' % r['measured_value'], r['source'], r['tasks_source'],
      'irq=%.3f steal=%.3f unaccounted=%.3f' % (r['irq_s'], r['steal_s'], r['unaccounted_share']),
      h['state'], 'other=%.2f idle=%.2f' % (h['other_cpus'], h['idle_cpus']),
      'captured=%.2f corrected=%.2f' % (j['captured_us_per_tran'], j['corrected_us_per_tran']),
      'short_lived=%.2f' % (j['other_cpu'].get('short_lived_us_per_tran') or 0),
      'tps=%.0f' % j['rate_tps'])"
  done
}
with_load() {
  local label=$1 script=$2; shift 2
  bash -c "$script" & load=$!
  sleep 0.5
  measure "$label" "$@"
  kill "$load"; wait "$load" 2>/dev/null || true; load=""
}

measure none
with_load shell-loop 'while :; do python3 -c "sum(range(200000))"; done'
with_load compile "while :; do cc -O2 -c $work/load.c -o $work/load.o; done"
with_load spin-loop 'while :; do :; done'
# No root cgroup readable: a mount namespace of its own with the cgroup mounts unmounted.
with_load no-cgroup+shell-loop 'while :; do python3 -c "sum(range(200000))"; done' \
  unshare -m sh -c 'for m in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/cpu,cpuacct /sys/fs/cgroup/unified /sys/fs/cgroup; do umount -l "$m" 2>/dev/null || true; done; exec "$@"' sh
