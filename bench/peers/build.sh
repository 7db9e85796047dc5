#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build.sh DIR: build the Go program in DIR (a bench/peers/* peer or
# bench/apps/driver) with CGO_ENABLED=0 -trimpath -ldflags='-s -w' (BENCH.md)
# into ~/.cache/kcr/peers/<name>-<version> (not committed), where <version> is
# the framework's version in its go.mod (controller-runtime's, else
# client-go's), and print that path. Rebuilds only when its sources changed.
set -euo pipefail
dir=$(cd "$1" && pwd)
name=$(basename "$dir")
out=${KCR_PEERS:-$HOME/.cache/kcr/peers}
mkdir -p "$out"
ver=$(awk '$1=="sigs.k8s.io/controller-runtime"{print $2; exit}' "$dir/go.mod")
[ -n "$ver" ] || ver=$(awk '$1=="k8s.io/client-go"{print $2; exit}' "$dir/go.mod")
bin=$out/$name-$ver
stamp=$(cat "$dir"/*.go "$dir/go.mod" | sha256sum | cut -c1-16)
if [ ! -x "$bin" ] || [ "$(cat "$bin.stamp" 2>/dev/null)" != "$stamp" ]; then
  (cd "$dir" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$bin" .) >&2
  echo "$stamp" >"$bin.stamp"
fi
echo "$bin"
