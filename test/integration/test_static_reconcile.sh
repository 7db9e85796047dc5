#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_static_reconcile.sh [BUILD_DIR]: the fully static kcr-operator
# (scripts/build-static.sh, into BUILD_DIR, default a temporary directory)
# reconciles an App from an empty root (issue 8): a chroot (`unshare -r` first when
# not root) holding ONLY the binary, /etc/hosts (localhost) and a kubeconfig whose
# server is https://localhost:<apiserver port> with every certificate inline. Run
# with an empty environment; the sample App is applied from outside into a
# namespace of its own; the Deployment appears and status.observedGeneration is
# set; the App is deleted (finalizer) while the operator runs; SIGTERM -> exit 0.
# Prints the stripped size.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
kubeconfig=${KCR_TEST_KUBECONFIG:?the controlplane fixture sets KCR_TEST_KUBECONFIG}
cluster=$(cd "$(dirname "$kubeconfig")" && pwd)
# shellcheck disable=SC2012 # one version directory
kubectl_bin=$(ls "${KCR_CACHE:-$HOME/.cache/kcr}"/k8s/*/bin/kubectl | tail -n 1)
port=$(sed -n 's/^kube-apiserver=//p' "$cluster/run/ports")
work=$(mktemp -d "${TMPDIR:-/tmp}/kcr-static-reconcile.XXXXXX")
build=${1:-$work/build}
ns=kcr-static-$$
pid=
k() { "$kubectl_bin" --kubeconfig "$kubeconfig" "$@"; }
cleanup() {
  if [ -n "$pid" ]; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  # A finalizer left behind (operator killed) would hold the namespace: drop it.
  k -n "$ns" patch app app-sample --type=merge -p '{"metadata":{"finalizers":null}}' \
    >/dev/null 2>&1 || true
  k delete ns "$ns" --wait=false >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- operator log (tail)" >&2
  tail -n 30 "$work/operator.log" >&2 || true
  exit 1
}
. "$(dirname "$0")/wait_lib.sh" # wait_for SECONDS DESCRIPTION COMMAND...
jp() { k -n "$ns" get "$1" -o "jsonpath=$2" 2>/dev/null; }
eq() { [ "$(jp "$1" "$2")" = "$3" ]; }
[ -n "$port" ] || fail "no kube-apiserver port in $cluster/run/ports"
if [ "$(id -u)" -ne 0 ] && ! unshare -r true 2>"$work/unshare.err"; then
  echo "SKIP: not root and user namespaces are refused (unshare -r: $(cat "$work/unshare.err")); chroot needs one"
  exit 0
fi

# 1. The static binary.
t0=$(date +%s)
KCR_STATIC_BUILD_DIR="$build" bash "$root/scripts/build-static.sh" "$build/bin" >"$work/build.log" 2>&1 ||
  { tail -n 30 "$work/build.log" >&2; fail "scripts/build-static.sh"; }
bin=$build/bin/kcr-operator
echo "built in $(($(date +%s) - t0))s"
lddout=$(ldd "$bin" 2>&1 || true) # ldd exits 1 on a static executable
grep -q 'not a dynamic executable' <<<"$lddout" || fail "ldd: $lddout"

# 2. The empty root: the binary, /etc/hosts, /kubeconfig and nothing else.
jail=$work/root
mkdir -p "$jail/etc"
cp "$bin" "$jail/kcr-operator"
printf '127.0.0.1 localhost\n' >"$jail/etc/hosts"
# --flatten inlines certificates named by path (cluster.sh's are already -data).
"$kubectl_bin" --kubeconfig "$kubeconfig" config view --raw --flatten >"$jail/kubeconfig"
kj() { "$kubectl_bin" --kubeconfig "$jail/kubeconfig" "$@"; }
clu=$(kj config view -o 'jsonpath={.contexts[?(@.name=="'"$(kj config current-context)"'")].context.cluster}')
[ -n "$clu" ] || fail "no cluster in the current context of $kubeconfig"
kj config set-cluster "$clu" --server="https://localhost:$port" >/dev/null
grep -q "server: https://localhost:$port\$" "$jail/kubeconfig" || fail "server not rewritten"
if grep -Eq '^ *(certificate-authority|client-certificate|client-key|tokenFile):' "$jail/kubeconfig"; then
  fail "the kubeconfig still names files outside the root"
fi
files=$(cd "$jail" && find . -type f | sort | tr '\n' ' ')
[ "$files" = "./etc/hosts ./kcr-operator ./kubeconfig " ] || fail "the root holds: $files"
[ "$(find "$jail" -mindepth 1 | wc -l)" -eq 4 ] || fail "the root holds more: $(find "$jail" -mindepth 1)"

# 3. Run it there, with an empty environment, watching only its namespace.
k apply -f "$root/config/crd/bases/kcr.dev_apps.yaml" >/dev/null
# kubectl wait fails at once while the new CRD has no status yet: retry.
for _ in 1 2 3 4 5 6 7 8 9; do
  k wait --for=condition=Established crd/apps.kcr.dev --timeout=60s >/dev/null 2>&1 && break
  sleep 0.5
done
k wait --for=condition=Established crd/apps.kcr.dev --timeout=60s >/dev/null
k create ns "$ns" >/dev/null
if [ "$(id -u)" -eq 0 ]; then jailer=(); else jailer=(unshare -r); fi
env -i POD_NAMESPACE="$ns" "${jailer[@]}" "$(command -v chroot)" "$jail" /kcr-operator \
  --kubeconfig /kubeconfig --health-probe-bind-address=127.0.0.1:0 --namespace="$ns" \
  --log-format=console >"$work/operator.log" 2>&1 &
pid=$!
wait_for 30 "the operator to start" grep -q 'REST config from /kubeconfig: server https://localhost:' \
  "$work/operator.log"

# 4. The sample App, applied from outside.
k -n "$ns" apply -f "$root/config/samples/kcr_v1alpha1_app.yaml" >/dev/null
uid=$(jp app/app-sample '{.metadata.uid}')
wait_for 30 "the Deployment" k -n "$ns" get deploy app-sample
eq deploy/app-sample '{.metadata.ownerReferences[0].uid}' "$uid" || fail "Deployment ownerReference"
gen=$(jp app/app-sample '{.metadata.generation}')
wait_for 30 "status.observedGeneration $gen" eq app/app-sample '{.status.observedGeneration}' "$gen"
wait_for 30 "the directory entry" sh -c "'$kubectl_bin' --kubeconfig '$kubeconfig' -n '$ns' \
  get cm app-directory -o jsonpath='{.data}' | grep -q '$ns.app-sample'"
k -n "$ns" delete app app-sample --timeout=60s >/dev/null || fail "the App was not deleted (finalizer)"
kill -0 "$pid" 2>/dev/null || fail "the operator died"

# 5. SIGTERM: exit 0.
kill -TERM "$pid"
for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
kill -0 "$pid" 2>/dev/null && fail "operator still running 30s after SIGTERM"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" -eq 0 ] || fail "operator exited $rc after SIGTERM"
echo "kcr-operator static binary: $(stat -c %s "$bin") bytes stripped"
echo "static reconcile: ok"
