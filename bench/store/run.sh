#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh [N]: build libkcr (build/bench, RelWithDebInfo) and the store benchmark,
# then print memory per cached object and read costs for N (default 10000)
# ConfigMaps and Pods. Not part of the test suite; figures go to docs/cache.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCR_BUILD_TESTS=OFF >/dev/null
cmake --build build/bench --target kcr_static >/dev/null
cc -O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Iinclude bench/store/store_bench.c \
  build/bench/libkcr.a $(pkg-config --libs jansson) -lpthread -o build/bench/store_bench
exec build/bench/store_bench "${1:-10000}" bench/store/pod.json
