#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run_priority.sh [rounds [keys [workers [work_us]]]]: the priority queue's
# queue-level figure (issue 25 item 5): builds kcr (release) and
# bench_priority.c, then runs it (priority on and off, alternating). Not part
# of the test suite. The figure against the API server is the integration
# test: KCR_PRIORITY_IT_N=10000 KCR_PRIORITY_IT_ROUNDS=3
# KCR_PRIORITY_IT_WORK_MS=1 ctest -R integration_test_priority_it -V
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${KCR_BENCH_BUILD:-$root/build/bench}
out=$build/bench_priority
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKCR_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target kcr_static >/dev/null
cc -O2 -std=c11 -D_GNU_SOURCE -I"$root/include" bench/workqueue/bench_priority.c \
  "$build/libkcr.a" $(pkg-config --libs jansson libcurl libuv yaml-0.1 openssl) -lpthread -lm -o "$out"
"$out" "$@"
