#!/usr/bin/env bash
# Prints how many jobs cargo should run on this host now: one a CPU (cargo's own default) on
# a host with CPUs to spare, four a CPU on one whose other runnable tasks already fill every
# CPU.
#
# Why: the kernel shares a busy CPU among the runnable tasks of a session (and of an
# autogroup), so a build of two jobs beside four busy loops on two CPUs gets a third of the
# machine, and one of eight gets two thirds. A fresh build of the test targets beside four
# `while :; do :; done` loops in one session took 510 s with 2 jobs, 402 s with 4 and 327 s
# with 8 (CPU 337, 371 and 359 s; docs/benchmarks.md). On a quiet host more jobs than CPUs
# only add switching, so they are kept for a loaded one.
#
# The host's load is read as it is now, not from the load average, whose minute-long decay
# still shows a quiet host for a minute after the load began: /proc/stat's procs_running,
# sampled 10 times over half a second, less this script's own reader, the median taken.
# CARGO_BUILD_JOBS set by the caller wins.
set -euo pipefail
cpus=$(nproc)
if [ -n "${CARGO_BUILD_JOBS:-}" ]; then
  echo "$CARGO_BUILD_JOBS"
  exit 0
fi
samples=()
for _ in 1 2 3 4 5 6 7 8 9 10; do
  samples+=("$(awk '/^procs_running/ { print $2 - 1 }' /proc/stat)")
  sleep 0.05
done
others=$(printf '%s\n' "${samples[@]}" | sort -n | sed -n 5p)
if [ "$others" -ge "$cpus" ]; then
  echo $((4 * cpus))
else
  echo "$cpus"
fi
