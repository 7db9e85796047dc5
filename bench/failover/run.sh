#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh [N]: failover time with a warm standby against a cold one (issue 25,
# item 7; kcr_manager_options.enable_warmup). A namespace holds N ConfigMaps
# of 1 KiB (default 10000). Each run starts replica A (bench/failover/
# failover.c), waits until A leads and has reconciled them all, starts
# replica B (warm or cold), gives it SETTLE s (default 5 + N/2000) to warm
# up, then SIGKILLs A. A does not release the Lease, so B waits out the lease
# (4 s) and then leads. Printed per run, in seconds from the SIGKILL:
#   kill_to_elected_s  B holds the Lease
#   kill_to_first_s    B's first reconcile began
#   kill_to_all_s      B had reconciled N ConfigMaps
# and, from B's election, elected_to_first_s and elected_to_all_s. Each
# implementation in IMPLS (default "kcr cr") runs cold and warm: kcr is
# failover.c, cr is controller-runtime's twin (bench/peers/go-cr-twins
# `failover`, EnableWarmup, the same lease timings; cr-proto: the same with
# protobuf, controller-runtime's default). Every pair runs them all,
# in reverse order in even pairs, PAIRS pairs (default 3), each run on a Lease
# of its own; the summary gives medians (min-max), warm/cold ratios per
# implementation and kcr/cr ratios per mode, each taken per pair. Not part
# of the tests.
#
# Environment: KCR_CLUSTER_DIR (an existing cluster; default: start one in
# build/bench/cluster and stop it after), IMPLS, PAIRS, SETTLE, RESULTS.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${BUILD_DIR:-build/bench}
out=$build/failover
mkdir -p "$out"
n=${1:-10000}
pairs=${PAIRS:-3}
settle=${SETTLE:-$((5 + n / 2000))}
impls=${IMPLS:-kcr cr}

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCR_BUILD_TESTS=OFF \
  -DKCR_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" --target kcr_static >/dev/null
libs="$(pkg-config --libs jansson libcurl libuv yaml-0.1 openssl) -lm"
# shellcheck disable=SC2086
cc -std=c11 -O2 -g -Wall -Wextra -Iinclude bench/failover/failover.c "$build/libkcr.a" $libs \
  -lpthread -o "$out/failover"
# shellcheck disable=SC2086
cc -std=c11 -O2 -g -Wall -Wextra -Iinclude bench/cache_sync/create.c "$build/libkcr.a" $libs \
  -lpthread -o "$out/create"
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
ns=fo-$n
"$out/create" -k "$kc" -n "$ns" -N "$n" -b 1024 >/dev/null
echo "# $ns holds $n ConfigMaps" >&2

# wait_line FILE WORD SECONDS: until FILE has a line starting with WORD.
wait_line() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -qs "^$2 " "$1" && return 0
    sleep 0.1
  done
  echo "# timed out waiting for $2 in $1" >&2
  return 1
}

field() { awk -v w="$2" '$1 == w { print $2; exit }' "$1"; }

results=${RESULTS:-$out/results-$(date -u +%Y%m%dT%H%M%SZ).txt}
# replica IMPL LEASE [FLAGS]: one replica of IMPL on LEASE; it execs, so
# that $! of "replica ... &" is the replica itself (kill -9 reaches it).
replica() {
  local impl=$1 lease=$2
  shift 2
  if [ "$impl" = cr ]; then
    exec "$cr" failover -kubeconfig "$kc" -namespace "$ns" -lease "$lease" -n "$n" "$@"
  elif [ "$impl" = cr-proto ]; then
    exec "$cr" failover -kubeconfig "$kc" -namespace "$ns" -lease "$lease" -n "$n" -protobuf "$@"
  else
    exec "$out/failover" -k "$kc" -n "$ns" -l "$lease" -N "$n" "$@"
  fi
}

run() {
  local impl=$1 mode=$2 i=$3 lease a b apid bpid t0 flags=(-x)
  if [ "$mode" = warm ]; then
    if [ "$impl" = kcr ]; then flags+=(-w); else flags+=(-warm); fi
  fi
  lease=fo-$impl-$mode-$i-$$
  a=$out/a.log b=$out/b.log
  # the replicas open their logs after the fork: a log left by the last run
  # would let wait_line see its ALL and start B before A leads
  rm -f "$a" "$b"
  replica "$impl" "$lease" >"$a" &
  apid=$!
  wait_line "$a" ALL 300
  replica "$impl" "$lease" "${flags[@]}" >"$b" &
  bpid=$!
  sleep "$settle"
  t0=$(date +%s%N)
  kill -9 "$apid"
  wait "$apid" 2>/dev/null || true
  wait_line "$b" ALL 300
  wait "$bpid"
  awk -v t0="$t0" -v impl="$impl" -v mode="$mode" -v n="$n" -v i="$i" '
    { t[$1] = $2 }
    END {
      printf "impl=%s mode=%s n=%d pair=%d kill_to_elected_s=%.3f kill_to_first_s=%.3f kill_to_all_s=%.3f elected_to_first_s=%.3f elected_to_all_s=%.3f\n",
        impl, mode, n, i, (t["ELECTED"] - t0) / 1e9, (t["FIRST"] - t0) / 1e9, (t["ALL"] - t0) / 1e9,
        (t["FIRST"] - t["ELECTED"]) / 1e9, (t["ALL"] - t["ELECTED"]) / 1e9
    }' "$b" | tee -a "$results"
}

echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$results" >&2
order=()
for impl in $impls; do order+=("$impl:cold" "$impl:warm"); done
for ((i = 1; i <= pairs; i++)); do
  if ((i % 2)); then seq=("${order[@]}"); else
    seq=()
    for ((j = ${#order[@]} - 1; j >= 0; j--)); do seq+=("${order[$j]}"); done
  fi
  for r in "${seq[@]}"; do run "${r%:*}" "${r#*:}" "$i"; done
done
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$results" >&2

python3 - "$results" <<'PY'
import statistics, sys
rows = [dict(kv.split("=", 1) for kv in line.split()) for line in open(sys.argv[1])
        if line.startswith(("mode=", "impl="))]
keys = ["kill_to_elected_s", "kill_to_first_s", "kill_to_all_s", "elected_to_first_s",
        "elected_to_all_s"]
by = {}  # (impl, mode) -> pair -> row
for r in rows:
    by.setdefault((r.get("impl", "kcr"), r["mode"]), {}).setdefault(r["pair"], r)

def med(xs):
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"

def ratio(a, b, k):
    common = sorted(set(by.get(a, {})) & set(by.get(b, {})))
    rs = [max(float(by[a][p][k]), 0.0) / float(by[b][p][k]) + 0.0 for p in common
          if float(by[b][p][k]) > 0]
    return f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f}, {len(rs)} pairs)" if rs else "-"

impls = sorted({i for i, _ in by}, key=lambda i: (i != "kcr", i))
for k in keys:
    print(k)
    for impl in impls:
        cold = [float(r[k]) for r in by.get((impl, "cold"), {}).values()]
        warm = [float(r[k]) for r in by.get((impl, "warm"), {}).values()]
        if cold and warm:
            print(f"  {impl}: cold {med(cold)} s, warm {med(warm)} s, "
                  f"warm/cold {ratio((impl, 'warm'), (impl, 'cold'), k)}")
    for peer in impls:
        if peer != "kcr" and "kcr" in impls:
            for mode in ("cold", "warm"):
                print(f"  kcr/{peer} {mode}: {ratio(('kcr', mode), (peer, mode), k)}")
PY
