#!/usr/bin/env bash
# Sourced by the other scripts: make sure cargo (Rust 1.88 or newer) is on PATH, installing
# it with rustup when it is missing. Prints what it does on stderr.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "ensure-rust: cargo not found; installing the stable toolchain with rustup" >&2
  if ! command -v curl >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then apt-get update -qq && apt-get install -y -qq curl ca-certificates build-essential >/dev/null; fi
  fi
  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c rustfmt,clippy >&2
  export PATH="$HOME/.cargo/bin:$PATH"
fi
