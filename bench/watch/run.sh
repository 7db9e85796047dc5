#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh [BUILD_DIR]: build bench_watch against BUILD_DIR's libkcr.a (default
# build/dev, built with -O2) and run it; with the Go toolchain present, also run
# the client-go peer (bench/watch/go) over the very same bytes. Not part of the tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/dev}
out=$build/bench/watch
mkdir -p "$out"
cmake --build "$build" --target kcr_static >/dev/null
# shellcheck disable=SC2046
cc -std=c11 -O2 -D_GNU_SOURCE -Iinclude bench/watch/bench_watch.c "$build/libkcr.a" \
  $(pkg-config --libs jansson libcurl libuv yaml-0.1 openssl) -lpthread -o "$out/bench_watch"
"$out/bench_watch" -w "$out"
if command -v go >/dev/null && [ -f bench/watch/go/go.mod ]; then
  (cd bench/watch/go && GOFLAGS=-mod=mod GOPROXY=${GOPROXY:-off} go build -o "$OLDPWD/$out/clientgo_watch" .) &&
    "$out/clientgo_watch" "$out/configmaps.jsonl" "$out/pods.jsonl"
fi
