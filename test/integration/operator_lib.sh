# SPDX-License-Identifier: MIT
# operator_lib.sh: what the kcr-operator shell tests (test_operator_*.sh) share.
# Sourced, after `set -euo pipefail`, with the operator binary as $1:
#   . "$(dirname "$0")/operator_lib.sh" "$@"
# It sets
#   op            the operator binary ($1)
#   kubeconfig    the fixture's admin kubeconfig (KCR_TEST_KUBECONFIG)
#   root          the repository root
#   cluster       the fixture's cluster directory (beside the kubeconfig)
#   kubectl_bin   the kubectl that scripts/build-control-plane.sh built
#   work          a scratch directory, removed at exit
#   pid           the operator's pid once started (empty when it is not running)
# and defines k (kubectl as admin), fail, wait_for, jp, eq, make_namespaces,
# install_crd, start_operator and stop_operator. At exit the operator is killed
# (after the Apps of $apps_ns, if set, are deleted so that their finalizers are
# released while it still runs), on_exit runs (a test may define it for its own
# clean-up), the namespaces made with make_namespaces are deleted and $work goes.
# log_tail (default 30) is how many lines of the operator's log a failure shows.

op=${1:?usage: $0 OPERATOR_BIN}
kubeconfig=${KCR_TEST_KUBECONFIG:?the controlplane fixture sets KCR_TEST_KUBECONFIG}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cluster=$(cd "$(dirname "$kubeconfig")" && pwd)
kubectl_bin=$(ls "${KCR_CACHE:-$HOME/.cache/kcr}"/k8s/*/bin/kubectl | tail -n 1)
work=$(mktemp -d)
pid=
apps_ns=
log_tail=30
lib_namespaces=()

k() { "$kubectl_bin" --kubeconfig "$kubeconfig" "$@"; }

lib_exit() {
  if [ -n "$pid" ]; then
    if [ -n "$apps_ns" ]; then
      k -n "$apps_ns" delete app --all --timeout=30s >/dev/null 2>&1 || true
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  if declare -F on_exit >/dev/null; then on_exit || true; fi
  if ((${#lib_namespaces[@]})); then
    k delete ns "${lib_namespaces[@]}" --wait=false >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap lib_exit EXIT

fail() {
  echo "FAIL: $*" >&2
  echo "--- operator log (tail)" >&2
  tail -n "$log_tail" "$work/operator.log" >&2 || true
  exit 1
}

# wait_for SECONDS DESCRIPTION COMMAND... (wait_lib.sh)
. "$(dirname "${BASH_SOURCE[0]}")/wait_lib.sh"

# jp OBJECT JSONPATH: a field of an object in namespace $ns (empty when absent).
jp() { k -n "$ns" get "$1" -o "jsonpath=$2" 2>/dev/null; }
# eq OBJECT JSONPATH VALUE: the field equals VALUE.
eq() { [ "$(jp "$1" "$2")" = "$3" ]; }

# make_namespaces NS...: create them; they are deleted at exit.
make_namespaces() {
  local n
  for n in "$@"; do
    k create ns "$n" >/dev/null
    lib_namespaces+=("$n")
  done
}

# install_crd: the App CRD, established.
install_crd() {
  k apply -f "$root/config/crd/bases/kcr.dev_apps.yaml" >/dev/null
  # kubectl wait fails at once while the new CRD has no status yet: retry.
  for _ in 1 2 3 4 5 6 7 8 9; do
    k wait --for=condition=Established crd/apps.kcr.dev --timeout=60s >/dev/null 2>&1 && break
    sleep 0.5
  done
  k wait --for=condition=Established crd/apps.kcr.dev --timeout=60s >/dev/null
}

# start_operator NS OPNS [ARG...]: the operator in the background as admin, acting
# only on Apps in NS (other tests create Apps too; an empty NS: all namespaces),
# its own namespace (the directory's) OPNS, logging to $work/operator.log; sets pid.
start_operator() {
  local watched=$1 own=$2
  shift 2
  local scope=()
  [ -n "$watched" ] && scope=(--namespace "$watched")
  POD_NAMESPACE=$own "$op" --kubeconfig "$kubeconfig" --health-probe-bind-address=127.0.0.1:0 \
    "${scope[@]}" --log-format=console "$@" >"$work/operator.log" 2>&1 &
  pid=$!
}

# stop_operator: SIGTERM, then it must exit 0 (a graceful stop).
stop_operator() {
  local rc=0
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  pid=
  [ "$rc" -eq 0 ] || fail "operator exited $rc after SIGTERM"
}
