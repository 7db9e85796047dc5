#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_operator_conflict.sh OPERATOR_BIN: NameConflict is re-checked (issue 16,
# bug 4: an App whose Deployment name was taken by an unowned Deployment stayed
# Degraded/NameConflict forever after that Deployment was deleted).
#   - An unowned Deployment "blocked" exists first; App "blocked" reports
#     Degraded/NameConflict, its other children (Service, ConfigMap) are made, and
#     the Deployment is left alone (no owner, its image unchanged).
#   - The unowned Deployment is deleted: within KCR_CONFLICT_BOUND seconds
#     (default 40: the operator re-checks every 15 s) the App has its own
#     Deployment and Degraded is no longer NameConflict.
#   - A child of ours whose managed-by label is removed leaves the operator's
#     cache (it caches only what it labels): the create that follows is refused
#     with AlreadyExists, the uncached read shows the App controls it, and it is
#     labelled again, with no NameConflict.
set -euo pipefail
. "$(dirname "$0")/operator_lib.sh" "$@"
bound=${KCR_CONFLICT_BOUND:-40}
ns=kcr-conflict-$$
opns=kcr-conflict-op-$$
apps_ns=$ns
degraded_reason() { jp app/blocked '{.status.conditions[?(@.type=="Degraded")].reason}'; }

install_crd
make_namespaces "$ns" "$opns"
start_operator "$ns" "$opns"

# 1. The name is taken: NameConflict, the rest is made, the intruder left alone.
k -n "$ns" create deployment blocked --image=busybox >/dev/null
cat <<EOF | k -n "$ns" apply -f - >/dev/null
apiVersion: kcr.dev/v1alpha1
kind: App
metadata: {name: blocked}
spec: {image: "nginx:1.27", replicas: 1, port: 80, config: {index.html: hello}}
EOF
uid=$(jp app/blocked '{.metadata.uid}')
wait_for 30 "Degraded/NameConflict" eq app/blocked '{.status.conditions[?(@.type=="Degraded")].reason}' NameConflict
for obj in svc/blocked cm/blocked-config; do
  wait_for 30 "$obj" eq "$obj" '{.metadata.ownerReferences[0].uid}' "$uid"
done
eq deploy/blocked '{.spec.template.spec.containers[0].image}' busybox || fail "the unowned Deployment was changed"
[ -z "$(jp deploy/blocked '{.metadata.ownerReferences}')" ] || fail "the unowned Deployment got an owner"

# 2. The intruder goes: the App takes the name within the bound.
k -n "$ns" delete deploy blocked --wait=true --timeout=30s >/dev/null
t0=$(date +%s.%N)
owned() {
  eq deploy/blocked '{.metadata.ownerReferences[0].uid}' "$uid" &&
    eq deploy/blocked '{.spec.template.spec.containers[0].image}' nginx:1.27 &&
    [ "$(degraded_reason)" != NameConflict ]
}
wait_for "$bound" "the App to take its Deployment after the unowned one was deleted" owned
t1=$(date +%s.%N)
echo "NameConflict cleared $(echo "$t1 - $t0" | bc) s after the unowned Deployment was deleted (bound ${bound} s); Degraded: $(degraded_reason)"

# 3. Our child loses its label: it leaves the cache, and is labelled again.
k -n "$ns" label deploy blocked app.kubernetes.io/managed-by- >/dev/null
relabelled() { eq deploy/blocked '{.metadata.labels.app\.kubernetes\.io/managed-by}' kcr-operator; }
wait_for 30 "the managed-by label back on deploy/blocked" relabelled
eq deploy/blocked '{.metadata.ownerReferences[0].uid}' "$uid" || fail "the relabelled Deployment is not the App's"
sleep 1
[ "$(degraded_reason)" != NameConflict ] || fail "our own unlabelled Deployment was reported as a conflict"
grep -q 'updated Deployment '"$ns"'/blocked' "$work/operator.log" || fail "no 'updated Deployment' in the log"

k -n "$ns" delete app blocked --timeout=60s >/dev/null || fail "the App was not deleted"
stop_operator
echo "operator conflict: ok"
