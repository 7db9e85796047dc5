#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# manager_test.sh MANAGER_BIN: the tutorial's "run it against a local cluster"
# (docs/tutorial.md, step 6) as a test: the manager binary against the cluster
# of $KCR_TEST_KUBECONFIG, kubectl as the user.
#   the CRD installed; the manager started with leader election, probes on a
#   free port and $MEMCACHED_IMAGE; /healthz and /readyz answer 200; the Lease
#   is taken; the sample applied -> Deployment with that image and
#   Available=True; kubectl patch size 3 -> 3 replicas (available with kwok's
#   fake nodes); size 4 refused by the CRD; kubectl delete -> the Deleting
#   Event and the Memcached gone; SIGTERM -> exit 0.
# kubectl: $KUBECTL, else the one kcr-envtest built, else kubectl on PATH.
set -euo pipefail
manager=${1:?usage: $0 MANAGER_BIN}
kubeconfig=${KCR_TEST_KUBECONFIG:?set KCR_TEST_KUBECONFIG to a cluster admin kubeconfig}
here=$(cd "$(dirname "$0")/../.." && pwd)
kubectl_bin=${KUBECTL:-$(ls "${KCR_CACHE:-$HOME/.cache/kcr}"/k8s/*/bin/kubectl 2>/dev/null | tail -n 1)}
kubectl_bin=${kubectl_bin:-kubectl}
ns=memcached-run-$$
image=registry.example.com/memcached:test
work=$(mktemp -d)
pid=

k() { "$kubectl_bin" --kubeconfig "$kubeconfig" "$@"; }
cleanup() {
  if [ -n "$pid" ]; then
    k -n "$ns" delete memcached --all --timeout=20s >/dev/null 2>&1 || true
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  k delete ns "$ns" --wait=false >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- manager log (tail)" >&2
  tail -n 30 "$work/manager.log" >&2 || true
  exit 1
}
# wait_for SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds, polled 4 times a second.
wait_for() {
  local secs=$1 what=$2
  shift 2
  for _ in $(seq 1 $((secs * 4))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.25
  done
  fail "timed out after ${secs}s waiting for $what"
}
jp() { k -n "$ns" get "$1" -o "jsonpath=$2" 2>/dev/null; }
eq() { [ "$(jp "$1" "$2")" = "$3" ]; }
probe() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port$1")" = 200 ]; }

# integration_memcached installs the same CRD on the shared cluster, maybe at
# this moment: apply's create then meets AlreadyExists, and a second apply
# updates what the other test made.
crd=$here/config/crd/bases/cache.example.com_memcacheds.yaml
k apply -f "$crd" >/dev/null 2>&1 || k apply -f "$crd" >/dev/null
k wait --for=condition=Established crd/memcacheds.cache.example.com --timeout=60s >/dev/null
k create ns "$ns" >/dev/null
# A free port for the probes (the kernel's choice, released just before use).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
MEMCACHED_IMAGE=$image "$manager" --kubeconfig "$kubeconfig" --namespace "$ns" --leader-elect \
  --leader-election-namespace "$ns" --health-probe-bind-address "127.0.0.1:$port" \
  >"$work/manager.log" 2>&1 &
pid=$!

wait_for 20 "/healthz" probe /healthz
wait_for 20 "/readyz" probe /readyz
wait_for 20 "the Lease" k -n "$ns" get lease memcached-operator.example.com

k -n "$ns" apply -f "$here/config/samples/cache_v1alpha1_memcached.yaml" >/dev/null
uid=$(jp memcached/memcached-sample '{.metadata.uid}')
wait_for 20 "Available=True" \
  eq memcached/memcached-sample '{.status.conditions[?(@.type=="Available")].status}' True
eq deploy/memcached-sample '{.spec.template.spec.containers[0].image}' "$image" || fail "image"
eq deploy/memcached-sample '{.metadata.ownerReferences[0].uid}' "$uid" || fail "ownerReference"
eq memcached/memcached-sample '{.metadata.finalizers[0]}' cache.example.com/finalizer ||
  fail "finalizer"

k -n "$ns" patch memcached memcached-sample --type merge -p '{"spec":{"size":3}}' >/dev/null
wait_for 20 "3 replicas" eq deploy/memcached-sample '{.spec.replicas}' 3
if [ "$(k get nodes -l type=kwok -o name | wc -l)" -ge 1 ]; then
  wait_for 30 "3 available replicas" eq deploy/memcached-sample '{.status.availableReplicas}' 3
fi
wait_for 20 "the condition says 3" sh -c "'$kubectl_bin' --kubeconfig '$kubeconfig' -n '$ns' \
  get memcached memcached-sample -o jsonpath='{.status.conditions}' | grep -q 'with 3 replicas'"
if k -n "$ns" patch memcached memcached-sample --type merge -p '{"spec":{"size":4}}' \
  >"$work/patch.log" 2>&1; then
  fail "size 4 accepted: the CRD says at most 3"
fi
grep -q 'spec.size' "$work/patch.log" || fail "size 4: $(cat "$work/patch.log")"

k -n "$ns" delete memcached memcached-sample --timeout=30s >/dev/null
wait_for 20 "the Memcached gone" sh -c "! '$kubectl_bin' --kubeconfig '$kubeconfig' -n '$ns' \
  get memcached memcached-sample"
wait_for 20 "the Deleting Event" sh -c "'$kubectl_bin' --kubeconfig '$kubeconfig' -n '$ns' \
  get events.events.k8s.io --field-selector reason=Deleting -o name | grep -q ."

kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" -eq 0 ] || fail "manager exited $rc after SIGTERM"
echo "ok"
