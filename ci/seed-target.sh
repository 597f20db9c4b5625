#!/usr/bin/env bash
# Seeds a target folder's profile directory INTO from the dependencies already built in FROM
# (e.g. target/debug), so that a second build there (the gate's base, the RabbitMQ-only
# build) finds them fresh and compiles only what differs: the workspace's own crates, and
# dependencies whose features differ. Nothing when INTO already holds a build (it is kept
# between runs) or FROM holds none.
#
#   bash ci/seed-target.sh target/debug target/gate-base/debug
#
# The compiled libraries (most of a gigabyte) are hard links: rustc writes a library it
# rebuilds to a new file and renames it into place, so a rebuild in INTO never reaches
# FROM's copy. What cargo and rustc rewrite in place (the fingerprints, dep-info files, build
# scripts' outputs: a few tens of MB) is copied. The workspace's own artifacts and the
# incremental caches are left out: the second build makes its own.
set -euo pipefail
from=${1:?usage: seed-target.sh FROM INTO}
into=${2:?usage: seed-target.sh FROM INTO}
[ -d "$from/deps" ] && [ ! -d "$into/deps" ] || exit 0
own=(! -name 'oemputx-*' ! -name 'liboemputx-*' ! -name 'sample?flow-*'
  ! -name '*oemputx_test_support-*')
mkdir -p "$into/deps"
find "$from/deps" -maxdepth 1 -type f "${own[@]}" ! -name '*.d' -exec cp -l -t "$into/deps" {} + 2>/dev/null || true
find "$from/deps" -maxdepth 1 -type f "${own[@]}" -name '*.d' -exec cp -t "$into/deps" {} + 2>/dev/null || true
for sub in build .fingerprint; do
  [ -d "$from/$sub" ] || continue
  mkdir -p "$into/$sub"
  find "$from/$sub" -mindepth 1 -maxdepth 1 "${own[@]}" -exec cp -a -t "$into/$sub" {} + 2>/dev/null || true
done
