#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh [N ...]: the cache-sync benchmark (issue 17). For each shape in
# SHAPES and each N (default: 1000 10000) it makes sure a namespace holds N
# objects of that shape, then runs kcr (bench/cache_sync/cache_sync.c), the
# floor (bench/cache_sync/null_reader.c) with JSON and with protobuf, the
# client-go peer (bench/peers/go-cache-sync) with JSON and with protobuf (as
# controller-runtime users run it for built-in kinds; issue 29) and the kube-rs
# peer (bench/peers/rust-cache-sync) alternately, PAIRS times each (default
# 3), every run a fresh process, and prints each run's line and the kcr/peer
# ratios (median, min-max). N = 0 is the idle process, synced on an empty
# namespace. Not part of the tests.
#
# Shapes (each in its own namespaces):
#   cm1k   ConfigMaps with 1 KiB of data, namespace cs-N
#   cm10k  ConfigMaps with 10 KiB of data, namespace cs-cm10k-N
#   pod    Pods (one container, a few labels and env vars; create.c), which
#          stay Pending (the cluster has no scheduler), namespace cs-pod-N
# Each result line carries shape=, n=, pair= and wire_bytes= (one object as the
# apiserver serves it, managedFields included; create -w) before the run's own
# fields, and after them apiserver_cpu_s= and etcd_cpu_s=: the CPU (user +
# system, /proc/PID/stat of the pids in the cluster's run/) kube-apiserver and
# etcd spent while the process ran, start to exit, so its settle window too,
# when the server does little. Each run starts after a pause of RUN_PAUSE s
# (default 1), so that the server's share of the previous run's teardown (the
# closed watches) is not counted in the next one. The servers' other work
# (kube-controller-manager's watches and leases) is in every figure alike.
#
# Environment:
#   SHAPES           shapes to run, in this order (default "cm1k")
#   RESULTS          file the result lines are appended to (default
#                    $BUILD_DIR/cache_sync/results-<date>.txt)
#   KCR_CLUSTER_DIR  an existing cluster directory (scripts/cluster.sh up DIR);
#                    default: start one in build/bench/cluster and stop it after
#   PAIRS            A/B pairs per N (default 3)
#   KCR_ARGS         extra cache_sync flags (default -s: the streaming list,
#                    as client-go's informer uses by default)
#   FLOOR=0          without the floor (bench/cache_sync/null_reader.c: the
#                    same streaming request, its bytes thrown away; issue 29)
#   PEER=0           kcr only (and the floors)
#   PROTO_PEER=0     without the protobuf runs (floor-proto: null_reader -p;
#                    client-go-proto: go-cache-sync -protobuf)
#   RUST_PEER=0      without the kube-rs peer (bench/peers/rust-cache-sync)
#   RUN_PAUSE        seconds of quiet before each run (default 1)
#   RELIST=1         force one relist in every run: each process gets a settle
#                    window of RELIST_SETTLE s (default RELIST_WAIT + 30 +
#                    N/5000); after RELIST_WAIT s (default 3 + N/2000: 10k
#                    ConfigMaps of 10 KiB take client-go 5 s; a run that
#                    took longer to sync is flagged) run.sh writes a
#                    namespace, compacts etcd and kills and restarts
#                    kube-apiserver (scripts/cluster.sh, KCR_RESTART_GRACE=0),
#                    so the re-watch from the old version gets 410 Gone and
#                    all three list again. Lines get relist=1; lists= says how
#                    many lists each process stored (2 when it worked), hwm_kb
#                    is the peak after the relist, hwm_synced_kb the one
#                    before it. Takes about RELIST_SETTLE s a run. The
#                    apiserver's pid changes, so these lines have no
#                    apiserver_cpu_s=; etcd_cpu_s= counts the compaction too.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${BUILD_DIR:-build/bench}
out=$build/cache_sync
mkdir -p "$out"
pairs=${PAIRS:-3}
kcr_args=${KCR_ARGS--s}
sizes=("$@")
((${#sizes[@]})) || sizes=(1000 10000)
read -r -a shapes <<<"${SHAPES:-cm1k}"
for shape in "${shapes[@]}"; do
  case $shape in
  cm1k | cm10k | pod) ;;
  *)
    echo "run.sh: unknown shape $shape (cm1k, cm10k, pod)" >&2
    exit 2
    ;;
  esac
done

# kcr linked as it ships (bench/link.sh; KCR_LINK=shared for the machine's
# shared libraries). The floor is linked the same way: it measures the
# server and the transfer, not a loader.
. bench/link.sh
for p in cache_sync create null_reader; do
  cc -std=c11 -O2 -g -Wall -Wextra -Iinclude -Itest/support "bench/cache_sync/$p.c" \
    test/support/kcr_faultproxy.c "$kcr_lib" "${kcr_libs[@]}" -o "$out/$p" 2>"$out/link-$p.log" || {
    cat "$out/link-$p.log" >&2
    exit 1
  }
  # glibc's note that getaddrinfo in a static binary needs NSS: kcr resolves
  # through c-ares. Anything else is shown.
  grep -v -E 'statically linked applications requires at runtime|in function `' \
    "$out/link-$p.log" >&2 || true
done
peer=
if [ "${PEER:-1}" != 0 ]; then
  peer=$(bench/peers/go-cache-sync/build.sh)
fi
rpeer=
if [ "${PEER:-1}" != 0 ] && [ "${RUST_PEER:-1}" != 0 ]; then
  rpeer=$(bench/peers/build-rust.sh bench/peers/rust-cache-sync)
fi

cluster=${KCR_CLUSTER_DIR:-}
own_cluster=0
if [ -z "$cluster" ]; then
  cluster=$root/$build/cluster
  own_cluster=1
  bash scripts/build-control-plane.sh >/dev/null
  bash scripts/cluster.sh up "$cluster" >/dev/null
  trap 'bash scripts/cluster.sh down "$cluster" >/dev/null 2>&1 || true' EXIT
fi
kc=$cluster/kubeconfig
tck=$(getconf CLK_TCK)

# server_ticks COMPONENT: "PID TICKS", the user + system CPU of a cluster
# component (its pidfile in run/) in clock ticks; nothing if it is not running.
# The fields are counted after the command name, which could hold a space.
server_ticks() {
  local pid
  pid=$(cat "$cluster/run/$1.pid" 2>/dev/null) || return 0
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | awk -v p="$pid" '{ print p, $12 + $13 }' || true
}

# server_cpu NAME BEFORE AFTER: " NAME=SECONDS" when both readings are of the
# same process, else nothing
server_cpu() {
  local b=($2) a=($3)
  ((${#b[@]} == 2 && ${#a[@]} == 2)) && [ "${b[0]}" = "${a[0]}" ] || return 0
  awk -v n="$1" -v d=$((a[1] - b[1])) -v t="$tck" 'BEGIN { printf " %s=%.2f", n, d / t }'
}

# measure CMD ARGS...: one run of one implementation (a fresh process) on $ns,
# its line tagged and appended to $results. With RELIST=1 the process gets a
# long settle window and a relist is forced during it (see the header).
measure() {
  local tag="shape=$shape n=$n pair=$i wire_bytes=$wire" line settle wait pid tmp flag log
  local api0 etcd0
  sleep "${RUN_PAUSE:-1}"
  api0=$(server_ticks kube-apiserver)
  etcd0=$(server_ticks etcd)
  if [ "${RELIST:-0}" = 0 ]; then
    line=$("$@")
    line+=$(server_cpu apiserver_cpu_s "$api0" "$(server_ticks kube-apiserver)")
    line+=$(server_cpu etcd_cpu_s "$etcd0" "$(server_ticks etcd)")
    echo "$tag $line" | tee -a "$results"
    return
  fi
  wait=${RELIST_WAIT:-$((3 + n / 2000))}
  settle=${RELIST_SETTLE:-$((wait + 30 + n / 5000))}
  flag=-settle
  [ "$1" = "$out/cache_sync" ] && flag=-t
  tmp=$(mktemp)
  "$@" "$flag" "$settle" >"$tmp" &
  pid=$!
  sleep "$wait"
  # A write after the last version the process saw, compacted away; then
  # kube-apiserver killed at once (no grace: a graceful stop would send every
  # watcher a bookmark with the newest version first, from which the re-watch
  # would resume without a 410) and started again.
  "$out/create" -k "$kc" -n "cs-bump-$(date +%s%N)" -N 0
  if ! log=$(bash scripts/cluster.sh compact "$cluster" 2>&1 &&
    KCR_RESTART_GRACE=0 bash scripts/cluster.sh restart-apiserver "$cluster" 2>&1); then
    echo "$log" >&2
    return 1
  fi
  wait "$pid"
  line=$(cat "$tmp")
  rm -f "$tmp"
  # kube-apiserver was restarted: its pid changed, server_cpu leaves it out
  line+=$(server_cpu etcd_cpu_s "$etcd0" "$(server_ticks etcd)")
  case " $line " in
  *" lists=1 "* | *" lists=0 "*) echo "# $shape N=$n: no relist in: $line" >&2 ;;
  esac
  # a sync slower than the wait saw the restart during its initial list
  if awk -v w="$wait" '{ for (k = 1; k <= NF; k++) if ($k ~ /^sync_s=/) { split($k, a, "="); exit !(a[2] >= w) } exit 1 }' <<<"$line"; then
    echo "# $shape N=$n: synced after the relist was forced: $line" >&2
    tag+=" relist_early=1"
  fi
  echo "$tag relist=1 $line" | tee -a "$results"
}

results=${RESULTS:-$out/results-$(date -u +%Y%m%dT%H%M%SZ).txt}
for shape in "${shapes[@]}"; do
  case $shape in
  cm1k) resource=configmaps create_args=(-b 1024) prefix=cs- ;;
  cm10k) resource=configmaps create_args=(-b 10240) prefix=cs-cm10k- ;;
  pod) resource=pods create_args=() prefix=cs-pod- ;;
  esac
  for n in "${sizes[@]}"; do
    ns=$prefix$n
    start=$(date +%s.%N)
    wire=$("$out/create" -k "$kc" -n "$ns" -N "$n" -r "$resource" -w "${create_args[@]}")
    wire=${wire#wire_bytes=}
    echo "# $shape N=$n: $ns ready in $(echo "$(date +%s.%N) - $start" | bc) s, $wire B an object" >&2
    for ((i = 1; i <= pairs; i++)); do
      # shellcheck disable=SC2086
      measure "$out/cache_sync" -k "$kc" -n "$ns" -r "$resource" $kcr_args
      if [ "${FLOOR:-1}" != 0 ] && [ "${RELIST:-0}" = 0 ]; then
        measure "$out/null_reader" -k "$kc" -n "$ns" -r "$resource"
        if [ "${PROTO_PEER:-1}" != 0 ]; then
          measure "$out/null_reader" -k "$kc" -n "$ns" -r "$resource" -p
        fi
      fi
      if [ -n "$peer" ]; then
        measure "$peer" -kubeconfig "$kc" -namespace "$ns" -resource "$resource"
        if [ "${PROTO_PEER:-1}" != 0 ]; then
          measure "$peer" -kubeconfig "$kc" -namespace "$ns" -resource "$resource" -protobuf
        fi
      fi
      if [ -n "$rpeer" ]; then
        measure "$rpeer" -kubeconfig "$kc" -namespace "$ns" -resource "$resource"
      fi
    done
  done
done
python3 bench/cache_sync/summarize.py "$results"
[ "$own_cluster" = 1 ] || true
