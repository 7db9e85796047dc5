#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# full.sh: `make bench-full`, BENCH.md's figures in one run against one local
# control plane, written to bench/results/<date>.json and plotted into
# docs/img/bench-*.png (bench/plot.sh). Long: 32 minutes here with the
# defaults (creating 100k ConfigMaps alone takes several minutes).
#
#   M1      binary sizes (stripped) and runtime dependencies
#   M2-M4   cache sync of N objects (bench/cache_sync/run.sh): kcr against
#           the floor and the client-go peer (each with JSON and protobuf)
#           and the kube-rs peer, PAIRS rounds per shape and N, each run with
#           the API server's and etcd's CPU (apiserver_cpu_s, etcd_cpu_s,
#           which collect.py keeps per run, per summary row and per ratio)
#   M5-M6   App throughput (bench/apps/run.sh): kcr, the controller-runtime
#           twin and the null generator, APP_PAIRS rounds
#   U1-U3   the micro-benchmarks (bench/workqueue, bench/store, bench/watch)
#
# Environment: KCR_CLUSTER_DIR (else a cluster is started and stopped), SHAPES
# (default "cm1k cm10k pod", see run.sh), SIZES (the N of cm1k, default
# "0 1000 10000 50000 100000"), SHAPE_SIZES (the N of the other shapes, default
# "0 10000"), PAIRS (3), APP_N (1000), APP_PAIRS (3),
# APP_IMPLS ("kcr cr cr-proto kube-rs null"), SKIP (any of "sizes sync apps micro"), PLOT_DIR
# (default docs/img). `make bench` is this with small settings.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${BUILD_DIR:-build/bench}
bash scripts/install-deps.sh gnuplot-nox >/dev/null # the plots (bench/plot.sh)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
tmp=$build/full-$stamp
mkdir -p "$tmp" bench/results
skip=" ${SKIP:-} "

cluster=${KCR_CLUSTER_DIR:-}
if [ -z "$cluster" ]; then
  cluster=$root/$build/cluster
  bash scripts/build-control-plane.sh >/dev/null
  bash scripts/cluster.sh up "$cluster" >/dev/null
  trap 'bash scripts/cluster.sh down "$cluster" >/dev/null 2>&1 || true' EXIT
fi
export KCR_CLUSTER_DIR=$cluster

args=()
if [[ $skip != *" sizes "* ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCR_BUILD_TESTS=OFF \
    -DKCR_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$build" --target kcr_operator >/dev/null
  size_line() { # name binary
    local s="$tmp/$1.stripped"
    strip -o "$s" "$2"
    local deps
    deps=$( (ldd "$s" 2>&1 || true) | awk '/=>/{print $1} /not a dynamic/{print "static"}' | tr '\n' ' ')
    echo "$1 $(stat -c %s "$s") $deps"
  }
  {
    size_line kcr-operator "$build/cmd/kcr-operator/kcr-operator"
    if [ "${KCR_LINK:-static}" = static ]; then # the one the cache and App runs measure
      . bench/link.sh
      size_line kcr-operator-static "$kcr_operator"
    fi
    size_line go-controller-runtime "$(bench/peers/build.sh bench/peers/go-controller-runtime)"
    size_line go-cache-sync "$(bench/peers/go-cache-sync/build.sh)"
    size_line rust-kube-rs "$(bench/peers/build-rust.sh bench/peers/rust-kube-rs)"
    size_line rust-cache-sync "$(bench/peers/build-rust.sh bench/peers/rust-cache-sync)"
  } >"$tmp/sizes.txt"
  cat "$tmp/sizes.txt"
  args+=(--sizes "$tmp/sizes.txt")
fi

if [[ $skip != *" sync "* ]]; then
  # cm1k at SIZES, the other shapes at SHAPE_SIZES, each run.sh to its own file
  read -r -a shapes <<<"${SHAPES-cm1k cm10k pod}"
  others=()
  for shape in "${shapes[@]}"; do
    if [ "$shape" = cm1k ]; then
      # shellcheck disable=SC2086 # SIZES is a list
      PAIRS=${PAIRS:-3} SHAPES=cm1k RESULTS="$tmp/sync-cm1k.txt" \
        bash bench/cache_sync/run.sh ${SIZES:-0 1000 10000 50000 100000}
      args+=(--sync "$tmp/sync-cm1k.txt")
    else
      others+=("$shape")
    fi
  done
  if ((${#others[@]})); then
    # shellcheck disable=SC2086 # SHAPE_SIZES is a list
    PAIRS=${PAIRS:-3} SHAPES="${others[*]}" RESULTS="$tmp/sync-shapes.txt" \
      bash bench/cache_sync/run.sh ${SHAPE_SIZES:-0 10000}
    args+=(--sync "$tmp/sync-shapes.txt")
  fi
fi

if [[ $skip != *" apps "* ]]; then
  N=${APP_N:-1000} PAIRS=${APP_PAIRS:-3} IMPLS=${APP_IMPLS:-kcr cr cr-proto kube-rs null} \
    OUT="$tmp/apps.jsonl" bash bench/apps/run.sh
  args+=(--apps "$tmp/apps.jsonl")
fi

if [[ $skip != *" micro "* ]]; then
  bash bench/workqueue/run.sh 3 >"$tmp/u1.txt" 2>&1 || true
  bash bench/store/run.sh >"$tmp/u2.txt" 2>&1 || true
  bash bench/watch/run.sh >"$tmp/u3.txt" 2>&1 || true
  args+=(--raw "U1=$tmp/u1.txt" "U2=$tmp/u2.txt" "U3=$tmp/u3.txt")
fi

python3 bench/collect.py "bench/results/$stamp.json" "${args[@]}"
bash bench/plot.sh "bench/results/$stamp.json" "${PLOT_DIR:-docs/img}"
echo "bench/results/$stamp.json"
