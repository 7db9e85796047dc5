#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh: the App-throughput benchmark (issue 17; BENCH.md M5, M6). N Apps
# (port, one env var, one config file, REPLICAS replicas) are reconciled by
# each implementation in turn, every run a fresh process in a fresh namespace,
# PAIRS rounds of A B C ... alternation. bench/apps/driver times each run
# (created -> all reconciled), reads CPU of the operator, kube-apiserver and
# etcd, and the apiserver_request_total deltas; summarize.py prints medians,
# min-max and the ratios to controller-runtime and to the null generator.
#
# Environment:
#   KCR_CLUSTER_DIR  an existing cluster (scripts/cluster.sh up DIR); default:
#                    start one in build/bench/cluster and stop it after
#   N                Apps per run (default 1000)
#   PAIRS            rounds (default 1)
#   MODE             before (Apps exist at start, default) or during
#   REPLICAS         spec.replicas of each App (default 0: no Pods, so the
#                    apiserver's load is the operators', not the ReplicaSets')
#   IMPLS            what to run, in order (default "kcr cr null"); known:
#                    kcr       build/bench's kcr-operator
#                    kcr-NAME  another kcr-operator, for levers: KCR_AB_BINS
#                              holds "NAME=/path/to/kcr-operator ..." pairs
#                    cr        the controller-runtime twin, JSON on the wire
#                    cr-proto  the twin with protobuf for built-in kinds
#                    cr-qps    the twin with a 20 qps / 30 burst bucket
#                    kube-rs   the kube-rs twin (bench/peers/rust-kube-rs; JSON, no
#                              client-side rate limit, Events as series PATCHes)
#                    cr-fifo   the twin with a FIFO queue (no priority queue)
#                    kcr-qps   kcr-operator with KCR_QPS=20 KCR_BURST=30 (if it
#                              reads them; it has no such flag today)
#                    null      the null generator, one App at a time (a
#                              sequential operator's ceiling)
#                    nullN     the null generator with N Apps in flight (the
#                              machine's ceiling), e.g. null8
#   SETTLE           seconds to wait after each run's clean-up (default 20): the
#                    garbage collector's tail of the last namespace would
#                    otherwise be charged to the next implementation
#   OUT              results file (JSON lines; default bench/results/apps-<date>.jsonl)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${BUILD_DIR:-build/bench}
n=${N:-1000}
pairs=${PAIRS:-1}
mode=${MODE:-before}
replicas=${REPLICAS:-0}
impls=${IMPLS:-kcr cr null}
mkdir -p bench/results
out=${OUT:-bench/results/apps-$(date -u +%Y%m%dT%H%M%SZ).jsonl}

# kcr-operator as it ships (bench/link.sh: static; KCR_LINK=shared for the
# machine's shared libraries).
. bench/link.sh
kcr=$kcr_operator
cr=$(bench/peers/build.sh bench/peers/go-controller-runtime)
null=$(bench/peers/build.sh bench/peers/null-generator)
driver=$(bench/peers/build.sh bench/apps/driver)
kubers=
case " $impls " in *" kube-rs "*) kubers=$(bench/peers/build-rust.sh bench/peers/rust-kube-rs) ;; esac

cluster=${KCR_CLUSTER_DIR:-}
if [ -z "$cluster" ]; then
  cluster=$root/$build/cluster
  bash scripts/build-control-plane.sh >/dev/null
  bash scripts/cluster.sh up "$cluster" >/dev/null
  trap 'bash scripts/cluster.sh down "$cluster" >/dev/null 2>&1 || true' EXIT
fi
kc=$cluster/kubeconfig
kubectl=$cluster/bin/kubectl
new_crd=0
"$kubectl" --kubeconfig "$kc" get crd apps.kcr.dev >/dev/null 2>&1 || new_crd=1
"$kubectl" --kubeconfig "$kc" apply -f config/crd/bases/kcr.dev_apps.yaml >/dev/null
"$kubectl" --kubeconfig "$kc" wait --for=condition=Established crd/apps.kcr.dev >/dev/null
# The garbage collector learns of a new resource at its next discovery resync
# (30 s); until then it GETs every App that owns a new child, which would be
# charged to whichever implementation runs first.
[ "$new_crd" = 0 ] || sleep 35
dirns=bench-directory
"$kubectl" --kubeconfig "$kc" create namespace "$dirns" >/dev/null 2>&1 || true
api_pid=$(cat "$cluster/run/kube-apiserver.pid")
etcd_pid=$(cat "$cluster/run/etcd.pid")
logs=$build/apps-logs
mkdir -p "$logs"

cmdline() { # impl ns
  case $1 in
  kcr | kcr-*)
    local bin=$kcr pair
    if [ "$1" != kcr ]; then
      bin=
      for pair in ${KCR_AB_BINS:-}; do
        [ "${pair%%=*}" = "${1#kcr-}" ] && bin=${pair#*=}
      done
      [ -n "$bin" ] || { echo "run.sh: $1 is not in KCR_AB_BINS" >&2; exit 2; }
    fi
    echo env POD_NAMESPACE=$dirns "$bin" --kubeconfig "$kc" --namespace "$2" \
      --health-probe-bind-address=0 --metrics-bind-address=0 --zap-log-level=info
    ;;
  cr) echo "$cr" --kubeconfig "$kc" -namespace "$2" -directory-namespace $dirns ;;
  cr-proto) echo "$cr" --kubeconfig "$kc" -namespace "$2" -directory-namespace $dirns -protobuf ;;
  cr-qps) echo "$cr" --kubeconfig "$kc" -namespace "$2" -directory-namespace $dirns -qps 20 -burst 30 ;;
  cr-fifo) echo "$cr" --kubeconfig "$kc" -namespace "$2" -directory-namespace $dirns -fifo ;;
  kube-rs) echo "$kubers" --kubeconfig "$kc" -namespace "$2" -directory-namespace $dirns ;;
  null) echo "$null" -kubeconfig "$kc" -namespace "$2" -directory-namespace $dirns ;;
  null[0-9]*) echo "$null" -kubeconfig "$kc" -namespace "$2" -directory-namespace $dirns -workers "${1#null}" ;;
  *)
    echo "run.sh: unknown implementation $1" >&2
    exit 2
    ;;
  esac
}

for ((i = 1; i <= pairs; i++)); do
  for impl in $impls; do
    ns=apps-$impl-$i-$(date +%s)
    "$kubectl" --kubeconfig "$kc" -n $dirns delete configmap app-directory --ignore-not-found >/dev/null
    # shellcheck disable=SC2046 # the command line is word-split on purpose
    line=$("$driver" run -kubeconfig "$kc" -namespace "$ns" -n "$n" -mode "$mode" \
      -replicas "$replicas" -apiserver-pid "$api_pid" -etcd-pid "$etcd_pid" -impl "$impl" \
      -log "$logs/$ns.log" -- $(cmdline "$impl" "$ns"))
    echo "$line" | tee -a "$out"
    sleep "${SETTLE:-20}"
  done
done
python3 bench/apps/summarize.py "$out"
