#!/usr/bin/env bash
# Prints two words: the jobs cargo should run on this host now, and whether the host is
# loaded. "default quiet" on a host with CPUs to spare (cargo picks its own jobs, one a CPU
# it may use); "N loaded" when the host's other runnable tasks already fill every CPU, N
# being four a CPU, at most 16.
#
# Why: the kernel shares a busy CPU among the runnable tasks of a session (and of an
# autogroup), so a build of two jobs beside four busy loops in one session gets a third of
# the two CPUs, and one of eight gets more than half. A fresh build of the test targets
# beside four `while :; do :; done` loops in one session took 510 s with 2 jobs, 402 s with
# 4 and 327 s with 8 (338, 371 and 359 s of CPU; docs/benchmarks.md). Where the load runs
# in another session, autogroups share the CPUs between the sessions first, and more jobs
# neither gain nor cost much. On a quiet host more jobs than CPUs only add switching.
#
# The host's load is read as it is now, not from the load average, whose minute-long decay
# still shows a quiet host for a minute after the load began: /proc/stat's procs_running,
# sampled 10 times over half a second, less this script's own reader, the median taken. A
# host without that line reads as quiet. A number in CARGO_BUILD_JOBS from the caller wins
# over the jobs (the host is still read for the second word).
set -euo pipefail
cpus=$(nproc)
samples=()
for _ in 1 2 3 4 5 6 7 8 9 10; do
  n=$(awk '/^procs_running/ { print $2 - 1 }' /proc/stat 2>/dev/null || true)
  [[ "$n" =~ ^[0-9]+$ ]] && samples+=("$n")
  sleep 0.05
done
state=quiet
if [ "${#samples[@]}" -gt 0 ]; then
  others=$(printf '%s\n' "${samples[@]}" | sort -n | sed -n "$(((${#samples[@]} + 1) / 2))p")
  [ "$others" -lt "$cpus" ] || state=loaded
fi
jobs=default
if [ "$state" = loaded ]; then
  jobs=$((4 * cpus))
  [ "$jobs" -le 16 ] || jobs=16
fi
if [[ "${CARGO_BUILD_JOBS:-}" =~ ^[0-9]+$ ]]; then
  jobs=$CARGO_BUILD_JOBS
fi
echo "$jobs $state"
