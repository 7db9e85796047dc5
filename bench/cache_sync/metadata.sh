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
# each pair divided on its own). With cr in IMPLS (default "kcr cr") each pair
# also runs controller-runtime's twin (bench/peers/go-cr-twins cache-sync
# -meta trim|wire: PartialObjectMetadata, which client-go's metadata client
# asks for in protobuf, against whole ConfigMaps in JSON reduced by a
# transform), whose rx_bytes it counts itself, in the same run, as TLS
# records read; the summary then adds the kcr/cr ratios per mode. cr-proto
# in IMPLS runs the twin with protobuf for the ConfigMaps too (-protobuf,
# controller-runtime's default). Not part of the tests.
#
# Environment:
#   KCR_CLUSTER_DIR  an existing cluster directory (scripts/cluster.sh up DIR);
#                    default: start one in build/bench/cluster and stop it after
#   PAIRS            pairs (default 3)
#   IMPLS            implementations, each pair in this order (default "kcr cr")
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
impls=${IMPLS:-kcr cr}
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
cr=
case " $impls " in *" cr "* | *" cr-proto "*) cr=$(bash bench/peers/build.sh bench/peers/go-cr-twins) ;; esac

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
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$results" >&2
for ((i = 1; i <= pairs; i++)); do
  for impl in $impls; do
    for mode in trim wire; do
      sleep 2 # let the apiserver finish with the previous process's watch
      c0=$(apiserver_ticks)
      if [ "$impl" = cr ]; then
        line=$("$cr" cache-sync -kubeconfig "$kc" -namespace "$ns" -meta "$mode")
      elif [ "$impl" = cr-proto ]; then
        line=$("$cr" cache-sync -kubeconfig "$kc" -namespace "$ns" -meta "$mode" -protobuf)
      else
        # shellcheck disable=SC2086
        line=$("$out/cache_sync" -k "$kc" -n "$ns" -r configmaps -t 0 -m "$mode" $kcr_args)
      fi
      c1=$(apiserver_ticks)
      rx=
      if [ "$impl" = kcr ]; then
        # the bytes in a run of their own, through the counting proxy
        sleep 2
        # shellcheck disable=SC2086
        rx=$("$out/cache_sync" -k "$kc" -n "$ns" -r configmaps -t 0 -m "$mode" -P $kcr_args |
          tr ' ' '\n' | grep '^rx_bytes=')
      fi
      echo "n=$n pair=$i $line apiserver_cpu_s=$(echo "($c1 - $c0) / $tck" | bc -l | cut -c1-6) $rx" |
        tee -a "$results"
    done
  done
done
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$results" >&2

python3 - "$results" <<'EOF'
import statistics, sys
from collections import defaultdict
F = ("rx_bytes", "cpu_s", "sync_s", "apiserver_cpu_s", "rss_kb")
runs = defaultdict(dict)  # (impl, meta) -> pair -> fields
for line in open(sys.argv[1]):
    if "meta=" not in line or line.startswith("#"):
        continue
    f = dict(kv.split("=", 1) for kv in line.split())
    runs[(f["impl"], f["meta"])][f["pair"]] = {k: float(f[k]) for k in F}

def ratio(a, b, k):
    rs = [runs[a][p][k] / runs[b][p][k] for p in runs[a] if p in runs[b] and runs[b][p][k]]
    return f"{statistics.median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f})" if rs else "-"

def med(key, k):
    xs = [r[k] for r in runs[key].values()]
    return f"{statistics.median(xs):g} ({min(xs):g}-{max(xs):g})"

impls = sorted({i for i, _ in runs}, key=lambda i: (i != "kcr", i))
for impl in impls:
    print(f"{impl}: | field | trim median (min-max) | wire median (min-max) | wire/trim (min-max) |")
    for k in F:
        print(f"| {k} | {med((impl, 'trim'), k)} | {med((impl, 'wire'), k)} | "
              f"{ratio((impl, 'wire'), (impl, 'trim'), k)} |")
for peer in impls:
    if peer == "kcr" or "kcr" not in impls:
        continue
    print(f"kcr/{peer}: | field | trim (min-max) | wire (min-max) |")
    for k in F:
        print(f"| {k} | {ratio(('kcr', 'trim'), (peer, 'trim'), k)} | "
              f"{ratio(('kcr', 'wire'), (peer, 'wire'), k)} |")
EOF
