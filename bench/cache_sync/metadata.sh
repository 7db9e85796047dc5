#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# metadata.sh [N]: metadata-only caching, on the wire against trimmed on
# arrival (issue 25). Makes sure namespace cs-cm10k-N (default N 10000) holds
# N ConfigMaps of 10 KiB (run.sh's cm10k shape), then runs cache_sync -m trim
# and -m wire alternately, PAIRS times each (default 3), every run a fresh
# process, and prints each run's line plus the kube-apiserver's CPU for that
# run (user + system ticks of its /proc/PID/stat, read before and after) and
# the bytes the server sent (rx_bytes, from a second run of the same mode
# through cache_sync -P's counting proxy, so the proxy costs the timed run
# nothing), then
# the wire/trim ratios of the medians (spread: the min and max over the pairs,
# each pair divided on its own). Not part of the tests.
#
# Environment:
#   KCR_CLUSTER_DIR  an existing cluster directory (scripts/cluster.sh up DIR);
#                    default: start one in build/bench/cluster and stop it after
#   PAIRS            pairs (default 3)
#   KCR_ARGS         extra cache_sync flags (default -s: the streaming list;
#                    "" for paged lists, which the apiserver gzips)
#   RESULTS          file the lines are appended to (default
#                    $BUILD_DIR/cache_sync/metadata-<date>.txt)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${BUILD_DIR:-build/bench}
out=$build/cache_sync
mkdir -p "$out"
pairs=${PAIRS:-3}
kcr_args=${KCR_ARGS--s}
n=${1:-10000}

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCR_BUILD_TESTS=OFF \
  -DKCR_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" -j2 --target kcr_static >/dev/null
libs="$(pkg-config --libs jansson libcurl libuv yaml-0.1 openssl) -lm"
# shellcheck disable=SC2086
cc -std=c11 -O2 -g -Wall -Wextra -Iinclude bench/cache_sync/create.c \
  "$build/libkcr.a" $libs -lpthread -o "$out/create"
# shellcheck disable=SC2086
cc -std=c11 -O2 -g -Wall -Wextra -Iinclude -Itest/support bench/cache_sync/cache_sync.c \
  test/support/kcr_faultproxy.c "$build/libkcr.a" $libs -lpthread -o "$out/cache_sync"

cluster=${KCR_CLUSTER_DIR:-}
if [ -z "$cluster" ]; then
  cluster=$root/$build/cluster
  bash scripts/build-control-plane.sh >/dev/null
  bash scripts/cluster.sh up "$cluster" >/dev/null
  trap 'bash scripts/cluster.sh down "$cluster" >/dev/null 2>&1 || true' EXIT
fi
kc=$cluster/kubeconfig
port=$(grep 'server:' "$kc" | sed 's/.*:\([0-9]*\)$/\1/')
apiserver=$(pgrep -f "kube-apiserver.*--secure-port=$port" | head -1)
tck=$(getconf CLK_TCK)
apiserver_ticks() { awk '{print $14 + $15}' "/proc/$apiserver/stat"; }

ns=cs-cm10k-$n
wire=$("$out/create" -k "$kc" -n "$ns" -N "$n" -r configmaps -w -b 10240)
echo "# N=$n in $ns, ${wire#wire_bytes=} B an object" >&2
results=${RESULTS:-$out/metadata-$(date -u +%Y%m%dT%H%M%SZ).txt}
for ((i = 1; i <= pairs; i++)); do
  for mode in trim wire; do
    sleep 2 # let the apiserver finish with the previous process's watch
    c0=$(apiserver_ticks)
    # shellcheck disable=SC2086
    line=$("$out/cache_sync" -k "$kc" -n "$ns" -r configmaps -t 0 -m "$mode" $kcr_args)
    c1=$(apiserver_ticks)
    # the bytes in a run of their own, through the counting proxy
    sleep 2
    # shellcheck disable=SC2086
    rx=$("$out/cache_sync" -k "$kc" -n "$ns" -r configmaps -t 0 -m "$mode" -P $kcr_args |
      tr ' ' '\n' | grep '^rx_bytes=')
    echo "n=$n pair=$i $line apiserver_cpu_s=$(echo "($c1 - $c0) / $tck" | bc -l | cut -c1-6) $rx" |
      tee -a "$results"
  done
done

python3 - "$results" <<'EOF'
import statistics, sys
from collections import defaultdict
F = ("rx_bytes", "cpu_s", "sync_s", "apiserver_cpu_s", "rss_kb")
by = defaultdict(lambda: defaultdict(list))  # mode -> field -> values
pairs = defaultdict(dict)  # pair -> mode -> fields
for line in open(sys.argv[1]):
    if "meta=" not in line:
        continue
    f = dict(kv.split("=", 1) for kv in line.split())
    for k in F:
        by[f["meta"]][k].append(float(f[k]))
    pairs[f["pair"]][f["meta"]] = f
print("| field | trim (median) | wire (median) | wire/trim | spread |")
print("|---|---|---|---|---|")
for k in F:
    t, w = statistics.median(by["trim"][k]), statistics.median(by["wire"][k])
    rs = [float(p["wire"][k]) / float(p["trim"][k]) for p in pairs.values()
          if "wire" in p and "trim" in p and float(p["trim"][k])]
    print(f"| {k} | {t:g} | {w:g} | {w / t:.3f} | {min(rs):.3f}-{max(rs):.3f} |")
EOF
