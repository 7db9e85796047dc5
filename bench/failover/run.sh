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
# and, from B's election, elected_to_first_s and elected_to_all_s. Cold and
# warm alternate, PAIRS pairs (default 3),
# each run on a Lease of its own; the summary gives medians and warm/cold
# ratios with their min-max over the pairs. Not part of the tests.
#
# Environment: KCR_CLUSTER_DIR (an existing cluster; default: start one in
# build/bench/cluster and stop it after), PAIRS, SETTLE, RESULTS.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${BUILD_DIR:-build/bench}
out=$build/failover
mkdir -p "$out"
n=${1:-10000}
pairs=${PAIRS:-3}
settle=${SETTLE:-$((5 + n / 2000))}

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
    grep -q "^$2 " "$1" && return 0
    sleep 0.1
  done
  echo "# timed out waiting for $2 in $1" >&2
  return 1
}

field() { awk -v w="$2" '$1 == w { print $2; exit }' "$1"; }

results=${RESULTS:-$out/results-$(date -u +%Y%m%dT%H%M%SZ).txt}
run() {
  local mode=$1 i=$2 lease a b apid bpid t0 flag=
  [ "$mode" = warm ] && flag=-w
  lease=fo-$mode-$i-$$
  a=$out/a.log b=$out/b.log
  "$out/failover" -k "$kc" -n "$ns" -l "$lease" -N "$n" >"$a" &
  apid=$!
  wait_line "$a" ALL 300
  # shellcheck disable=SC2086
  "$out/failover" -k "$kc" -n "$ns" -l "$lease" -N "$n" -x $flag >"$b" &
  bpid=$!
  sleep "$settle"
  t0=$(date +%s%N)
  kill -9 "$apid"
  wait "$apid" 2>/dev/null || true
  wait_line "$b" ALL 300
  wait "$bpid"
  awk -v t0="$t0" -v mode="$mode" -v n="$n" -v i="$i" '
    { t[$1] = $2 }
    END {
      printf "mode=%s n=%d pair=%d kill_to_elected_s=%.3f kill_to_first_s=%.3f kill_to_all_s=%.3f elected_to_first_s=%.3f elected_to_all_s=%.3f\n",
        mode, n, i, (t["ELECTED"] - t0) / 1e9, (t["FIRST"] - t0) / 1e9, (t["ALL"] - t0) / 1e9,
        (t["FIRST"] - t["ELECTED"]) / 1e9, (t["ALL"] - t["ELECTED"]) / 1e9
    }' "$b" | tee -a "$results"
}

for ((i = 1; i <= pairs; i++)); do
  if ((i % 2)); then run cold "$i" && run warm "$i"; else run warm "$i" && run cold "$i"; fi
done

python3 - "$results" <<'PY'
import statistics, sys
rows = [dict(kv.split("=", 1) for kv in line.split()) for line in open(sys.argv[1]) if line.startswith("mode=")]
keys = ["kill_to_elected_s", "kill_to_first_s", "kill_to_all_s", "elected_to_first_s",
        "elected_to_all_s"]
by = {}
for r in rows:
    by.setdefault(r["mode"], {}).setdefault(r["pair"], r)
pairs = sorted(set(by.get("warm", {})) & set(by.get("cold", {})))
for k in keys:
    cold = [float(by["cold"][p][k]) for p in pairs]
    warm = [float(by["warm"][p][k]) for p in pairs]
    ratios = [max(w, 0) / c for w, c in zip(warm, cold) if c > 0]
    line = f"{k}: cold median {statistics.median(cold):.3f} s, warm median {statistics.median(warm):.3f} s"
    if ratios:
        line += f", warm/cold {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}, {len(ratios)} pairs)"
    print(line)
PY
