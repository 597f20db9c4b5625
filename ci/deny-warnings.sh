#!/bin/sh
# A rustc wrapper for the workspace's own crates (RUSTC_WORKSPACE_WRAPPER) that makes their
# warnings errors, as RUSTFLAGS="-D warnings" would. Unlike RUSTFLAGS it leaves the
# dependencies' command lines, and so their fingerprints, as they were: a build seeded from
# another target folder (ci/seed-target.sh) reuses them instead of compiling all again.
exec "$@" -D warnings
