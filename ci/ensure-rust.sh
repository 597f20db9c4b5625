#!/usr/bin/env bash
# Sourced by the other scripts: make sure cargo with Rust 1.95 or newer (the mqi crate's
# minimum) is on PATH, installing the stable toolchain with rustup when cargo is missing
# or older. Prints what it does on stderr; leaves the user's default toolchain alone.
RUST_MIN_MINOR=95
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
rust_minor() { rustc --version 2>/dev/null | awk '{print $2}' | cut -d. -f2; }
install_rustup() {
  if ! command -v curl >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then apt-get update -qq && apt-get install -y -qq curl ca-certificates build-essential >/dev/null; fi
  fi
  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --no-modify-path --profile minimal -c rustfmt,clippy >&2
  export PATH="$HOME/.cargo/bin:$PATH"
}
if ! command -v cargo >/dev/null 2>&1; then
  echo "ensure-rust: cargo not found; installing the stable toolchain with rustup" >&2
  install_rustup
elif [ "$(rust_minor)" -lt "$RUST_MIN_MINOR" ] 2>/dev/null; then
  echo "ensure-rust: $(rustc --version) is older than 1.$RUST_MIN_MINOR; using rustup's stable toolchain for this build" >&2
  command -v rustup >/dev/null 2>&1 || install_rustup
  rustup toolchain install stable --profile minimal -c rustfmt,clippy >&2
  export RUSTUP_TOOLCHAIN=stable
fi
