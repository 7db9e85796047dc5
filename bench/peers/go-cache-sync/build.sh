#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build.sh: build the client-go peer into ~/.cache/kcr/peers (not committed) and
# print its path. Rebuilds only when main.go or go.mod changed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${KCR_PEERS:-$HOME/.cache/kcr/peers}
mkdir -p "$out"
bin=$out/go-cache-sync
stamp=$(cat "$here/main.go" "$here/go.mod" | sha256sum | cut -c1-16)
if [ ! -x "$bin" ] || [ "$(cat "$bin.stamp" 2>/dev/null)" != "$stamp" ]; then
  (cd "$here" && GOFLAGS=-mod=mod go build -trimpath -o "$bin" .) >&2
  echo "$stamp" >"$bin.stamp"
fi
echo "$bin"
