#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run_priority_api.sh [N]: the priority queue against the API server, kcr and
# controller-runtime in one run (issue 25 item 5). A namespace holds N
# ConfigMaps (default 10000, bench/cache_sync/create.c) and cm-zz-target, the
# last of the initial list; each run is a fresh process with one worker at
# WORK_MS (default 1) per reconcile that changes cm-zz-target once ten are
# reconciled and prints the time from the change to the reconcile that reads
# it: bench/workqueue/priority_api.c for kcr, bench/peers/go-cr-twins
# `priority` for controller-runtime (v0.25, UsePriorityQueue). Each round runs
# kcr on, kcr off, cr on, cr off (the order rotates by one each round);
# ROUNDS rounds (default 3). The summary gives medians (min-max) and the
# ratios kcr/cr and off/on, each taken per round. Not part of the tests.
#
# Environment: KCR_CLUSTER_DIR (an existing cluster; default: start one in
# build/bench/cluster and stop it after), ROUNDS, WORK_MS, RESULTS, PEER (cr,
# the default, JSON; cr-proto: the twin with protobuf, controller-runtime's
# default).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${BUILD_DIR:-build/bench}
out=$build/priority_api
mkdir -p "$out"
n=${1:-10000}
rounds=${ROUNDS:-3}
work_ms=${WORK_MS:-1}
peer=${PEER:-cr}
peer_flags=()
[ "$peer" = cr-proto ] && peer_flags=(-protobuf)

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCR_BUILD_TESTS=OFF \
  -DKCR_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" -j2 --target kcr_static >/dev/null
libs="$(pkg-config --libs jansson libcurl libuv yaml-0.1 openssl) -lm"
# shellcheck disable=SC2086
cc -std=c11 -O2 -g -Wall -Wextra -Iinclude bench/workqueue/priority_api.c "$build/libkcr.a" \
  $libs -lpthread -o "$out/priority_api"
# shellcheck disable=SC2086
cc -std=c11 -O2 -g -Wall -Wextra -Iinclude bench/cache_sync/create.c "$build/libkcr.a" $libs \
  -lpthread -o "$out/create"
cr=$(bash bench/peers/build.sh bench/peers/go-cr-twins)

cluster=${KCR_CLUSTER_DIR:-}
if [ -z "$cluster" ]; then
  cluster=$root/$build/cluster
  bash scripts/build-control-plane.sh >/dev/null
  bash scripts/cluster.sh up "$cluster" >/dev/null
  trap 'bash scripts/cluster.sh down "$cluster" >/dev/null 2>&1 || true' EXIT
fi
kc=$cluster/kubeconfig
ns=prio-$n
"$out/create" -k "$kc" -n "$ns" -N "$n" -b 16 >/dev/null
echo "# $ns holds $n ConfigMaps (+ cm-zz-target); load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

results=${RESULTS:-$out/results-$(date -u +%Y%m%dT%H%M%SZ).txt}
runs=(kcr:on kcr:off "$peer:on" "$peer:off")
for ((i = 1; i <= rounds; i++)); do
  for ((j = 0; j < 4; j++)); do
    run=${runs[$(((i - 1 + j) % 4))]}
    impl=${run%:*} pq=${run#*:}
    sleep 2 # let the server finish with the previous process's watch
    if [ "$impl" = kcr ]; then
      line=$("$out/priority_api" -k "$kc" -n "$ns" -N "$n" -p "$pq" -W "$work_ms")
    else
      line=$("$cr" priority -kubeconfig "$kc" -namespace "$ns" -n "$n" -pq "$pq" -work-ms "$work_ms" \
        "${peer_flags[@]}")
    fi
    echo "round=$i $line load1=$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$results"
  done
done

python3 - "$results" <<'PY'
import statistics, sys
from collections import defaultdict
lat = defaultdict(dict)  # (impl, pq) -> round -> latency_ms
wait = defaultdict(list)
for line in open(sys.argv[1]):
    if not line.startswith("round="):
        continue
    f = dict(kv.split("=", 1) for kv in line.split())
    lat[(f["impl"], f["pq"])][f["round"]] = float(f["latency_ms"])
    wait[(f["impl"], f["pq"])].append(int(f["waiting"]))

def spread(xs):
    return f"{statistics.median(xs):.1f} ({min(xs):.1f}-{max(xs):.1f})"

def ratio(a, b):
    rs = [lat[a][r] / lat[b][r] for r in lat[a] if r in lat[b] and lat[b][r] > 0]
    return f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f}, {len(rs)} rounds)" if rs else "-"

for k in sorted(lat):
    print(f"{k[0]} pq={k[1]}: latency_ms median {spread(list(lat[k].values()))}, "
          f"waiting median {statistics.median(wait[k]):.0f}")
peer = next(i for i, _ in sorted(lat) if i != "kcr")
for pq in ("on", "off"):
    print(f"kcr/{peer} pq={pq}: {ratio(('kcr', pq), (peer, pq))}")
for impl in ("kcr", peer):
    print(f"{impl} off/on: {ratio((impl, 'off'), (impl, 'on'))}")
PY
