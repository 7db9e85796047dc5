#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh [rounds]: U1 of BENCH.md. Builds kcr (release) and the C benchmark, and,
# when Go and k8s.io/client-go v0.37.2 are available (module cache or proxy),
# the same shapes against client-go; runs them alternately (C, Go, C, Go) and
# prints both. Not part of the test suite.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${KCR_BENCH_BUILD:-$root/build/bench}
rounds=${1:-5}
out=$build/bench_workqueue
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKCR_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target kcr_static >/dev/null
cc -O2 -std=c11 -D_GNU_SOURCE -I"$root/include" bench/workqueue/bench_workqueue.c \
  "$build/libkcr.a" $(pkg-config --libs jansson libcurl libuv yaml-0.1 openssl) -lpthread -lm -o "$out"
gobin=""
if command -v go >/dev/null; then
  if (cd bench/workqueue/go && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go build -o "$build/bench_workqueue_go" . 2>"$build/go-build.log"); then
    gobin=$build/bench_workqueue_go
  else
    echo "(client-go peer not built: see $build/go-build.log)"
  fi
fi
for pass in 1 2; do
  echo "== kcr (pass $pass)"
  "$out" "$rounds"
  if [ -n "$gobin" ]; then
    echo "== client-go v0.37.2 (pass $pass)"
    "$gobin" "$rounds"
  fi
done
