#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build-rust.sh DIR: build the Rust peer in DIR (bench/peers/rust-*) with
# `cargo build --release` (its Cargo.toml: opt-level 3, stripped, what a user
# ships) into ~/.cache/kcr/peers/<name>-<version> (not committed), where
# <version> is the kube crate's version pinned in its Cargo.toml, and print that
# path. Rebuilds only when its sources changed. Cargo's build tree is
# ~/.cache/kcr/cargo-target (CARGO_TARGET_DIR), shared by the peers, so nothing
# lands in the repository. Direct dependencies are pinned (=x.y.z); their
# Cargo.lock, which names the index, stays untracked (.gitignore), so the first
# build resolves the transitive ones and later builds keep that resolution.
# KCR_CARGO_JOBS (default 2) bounds the build's parallelism.
set -euo pipefail
dir=$(cd "$1" && pwd)
name=$(basename "$dir")
out=${KCR_PEERS:-$HOME/.cache/kcr/peers}
mkdir -p "$out"
ver=$(sed -n 's/^kube = .*version = "=\{0,1\}\([0-9][0-9.]*\)".*/\1/p' "$dir/Cargo.toml" | head -1)
[ -n "$ver" ] || { echo "build-rust.sh: no kube version in $dir/Cargo.toml" >&2; exit 2; }
bin=$out/$name-$ver
stamp=$(cat "$dir/Cargo.toml" "$dir"/src/*.rs | sha256sum | cut -c1-16)
if [ ! -x "$bin" ] || [ "$(cat "$bin.stamp" 2>/dev/null)" != "$stamp" ]; then
  target=${CARGO_TARGET_DIR:-$HOME/.cache/kcr/cargo-target}
  (cd "$dir" && CARGO_TARGET_DIR=$target cargo build --release -j "${KCR_CARGO_JOBS:-2}") >&2
  cp "$target/release/$name" "$bin.tmp"
  mv "$bin.tmp" "$bin"
  echo "$stamp" >"$bin.stamp"
fi
echo "$bin"
