#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_operator_namespaced.sh OPERATOR_BIN: the namespaced RBAC variant
# (config/rbac-namespaced, issue 16, bug 11) is sufficient and tight.
#   - A ServiceAccount holds Roles only: config/rbac-namespaced (the manager Role
#     in the watched namespace, the directory Role in its own) and config/rbac's
#     leader-election Role; the operator runs with a kubeconfig holding nothing but
#     that ServiceAccount's token, WATCH_NAMESPACE set to two watched namespaces
#     (comma-separated: one list-watch each; the manager Role in each), leader
#     election on.
#   - Sufficient: the sample App gets its children, status, finalizer and directory
#     entry; deleting it runs the finalizer; the operator logs no Forbidden.
#   - The second watched namespace's App is reconciled too.
#   - Scoped: an App in another namespace is not touched.
#   - Tight: the token cannot create Deployments elsewhere or list them across the
#     cluster, and config/rbac-namespaced/role.yaml grants exactly the rules of
#     config/rbac/role.yaml (the two cannot drift apart).
# SIGTERM -> exit 0.
set -euo pipefail
. "$(dirname "$0")/operator_lib.sh" "$@"
port=$(sed -n 's/^kube-apiserver=//p' "$cluster/run/ports")
sa=kcr-controller-manager
ns=kcr-nsd-$$       # the watched namespace (kcr-apps in the manifests)
ns2=kcr-nsd-b-$$    # a second watched namespace
opns=kcr-nsd-op-$$  # the operator's namespace (kcr-system in the manifests)
other=kcr-nsd-x-$$  # a namespace it must not touch
apps_ns=$ns
ksa() { "$kubectl_bin" --kubeconfig "$work/sa.kubeconfig" "$@"; }
# place FILE: the manifest with the test's namespaces in place of the manifests'.
place() { sed -e "s/namespace: kcr-apps\$/namespace: $ns/" -e "s/namespace: kcr-system\$/namespace: $opns/" "$1"; }
rules() { k create --dry-run=client -o json -f "$1" | jq -S .rules; }

[ -n "$port" ] || fail "no kube-apiserver port in $cluster/run/ports"
[ "$(rules "$root/config/rbac-namespaced/role.yaml")" = "$(rules "$root/config/rbac/role.yaml")" ] ||
  fail "config/rbac-namespaced/role.yaml and config/rbac/role.yaml grant different rules"

install_crd
make_namespaces "$ns" "$ns2" "$opns" "$other"
k -n "$opns" create serviceaccount "$sa" >/dev/null
# Roles only: config/rbac-namespaced, and config/rbac's leader-election Role.
# config/rbac's, as config/default renders it (kcr- names in kcr-system).
rdir=$work/rendered
bash "$root/test/integration/render_config.sh" "$kubectl_bin" "$root/config/default" "$rdir"
for f in "$root"/config/rbac-namespaced/*role*.yaml "$rdir"/Role_kcr-leader-election-role.yaml \
  "$rdir"/RoleBinding_kcr-leader-election-rolebinding.yaml; do
  place "$f" | k apply -f - >/dev/null
done
# The manager Role and its binding in the second watched namespace as well.
for f in "$root"/config/rbac-namespaced/role.yaml "$root"/config/rbac-namespaced/role_binding.yaml; do
  place "$f" | sed "s/namespace: $ns\$/namespace: $ns2/" | k apply -f - >/dev/null
done
[ -z "$(k get clusterrolebinding -o json | jq -r --arg ns "$opns" \
  '.items[] | select(.subjects[]? | .kind == "ServiceAccount" and .namespace == $ns) | .metadata.name')" ] ||
  fail "a ClusterRoleBinding names the ServiceAccount"

# A kubeconfig with nothing but the ServiceAccount's token.
token=$(k -n "$opns" create token "$sa" --duration=1h)
ksa config set-cluster c --server="https://127.0.0.1:$port" \
  --certificate-authority="$cluster/pki/ca.crt" --embed-certs=true >/dev/null
ksa config set-credentials sa --token="$token" >/dev/null
ksa config set-context c --cluster=c --user=sa >/dev/null
ksa config use-context c >/dev/null

WATCH_NAMESPACE=$ns,$ns2 POD_NAMESPACE=$opns "$op" --kubeconfig "$work/sa.kubeconfig" \
  --leader-elect --leader-election-namespace "$opns" --health-probe-bind-address=127.0.0.1:0 \
  --log-format=console >"$work/operator.log" 2>&1 &
pid=$!
wait_for 30 "the watch namespaces from WATCH_NAMESPACE" grep -q "watch namespace $ns,$ns2," \
  "$work/operator.log"

# Sufficient.
k -n "$ns" apply -f "$root/config/samples/kcr_v1alpha1_app.yaml" >/dev/null
uid=$(jp app/app-sample '{.metadata.uid}')
for obj in deploy/app-sample svc/app-sample cm/app-sample-config; do
  wait_for 60 "$obj" eq "$obj" '{.metadata.ownerReferences[0].uid}' "$uid"
done
entry() { k -n "$opns" get cm app-directory -o jsonpath='{.data}' 2>/dev/null | grep -q "$ns.app-sample"; }
wait_for 30 "the directory entry in $opns" entry
eq app/app-sample '{.metadata.finalizers[0]}' kcr.dev/directory || fail "finalizer"
gen=$(jp app/app-sample '{.metadata.generation}')
wait_for 30 "status.observedGeneration $gen" eq app/app-sample '{.status.observedGeneration}' "$gen"
[ -n "$(k -n "$opns" get lease kcr-operator.kcr.dev -o 'jsonpath={.spec.holderIdentity}')" ] ||
  fail "no Lease holder in $opns"

# The second watched namespace.
k -n "$ns2" apply -f "$root/config/samples/kcr_v1alpha1_app.yaml" >/dev/null
uid2=$(k -n "$ns2" get app app-sample -o 'jsonpath={.metadata.uid}')
owned2() { [ "$(k -n "$ns2" get deploy app-sample -o 'jsonpath={.metadata.ownerReferences[0].uid}' 2>/dev/null)" = "$uid2" ]; }
wait_for 60 "deploy/app-sample in $ns2" owned2
k -n "$ns2" delete app app-sample --timeout=60s >/dev/null || fail "the App in $ns2 was not deleted within 60s"

# Scoped: an App elsewhere is not the operator's business.
k -n "$other" apply -f "$root/config/samples/kcr_v1alpha1_app.yaml" >/dev/null
sleep 3
! k -n "$other" get deploy app-sample >/dev/null 2>&1 || fail "an App outside $ns was reconciled"
[ -z "$(k -n "$other" get app app-sample -o 'jsonpath={.metadata.finalizers}')" ] ||
  fail "an App outside $ns got the finalizer"

k -n "$ns" delete app app-sample --timeout=60s >/dev/null || fail "the App was not deleted within 60s"
! entry || fail "the directory entry survived the App"
if grep -q 'forbidden: User ' "$work/operator.log"; then
  grep 'forbidden: User ' "$work/operator.log" | head -n 5 >&2
  fail "the operator was refused something: the namespaced RBAC is not sufficient"
fi
echo "sufficient: reconciled with Roles only, directory entry and finalizer in $opns"

# Tight.
cani() { ksa auth can-i "$@" 2>/dev/null || true; }
[ "$(cani create deployments -n "$ns")" = yes ] || fail "cannot create deployments in $ns"
for q in "create deployments -n $other" "list deployments -A" "create deployments -n $opns" \
  "get configmaps -n $opns" "update configmaps/other -n $opns" "list apps.kcr.dev -A"; do
  # shellcheck disable=SC2086 # the words of the query
  [ "$(cani $q)" = no ] || fail "auth can-i $q: not no"
done
[ "$(cani update configmaps/app-directory -n "$opns")" = yes ] || fail "cannot update the directory"
echo "tight: nothing outside $ns but the directory and the Lease"

stop_operator
k -n "$other" delete app app-sample --wait=false >/dev/null 2>&1 || true
echo "operator namespaced: ok"
