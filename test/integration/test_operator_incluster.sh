#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_operator_incluster.sh OPERATOR_BIN: the App operator run as it would run in a
# Pod, against the local control plane (issue 8, "Done when" item 3):
#   - no kubeconfig, no KUBECONFIG, no HOME, no POD_NAMESPACE (env -i);
#     KUBERNETES_SERVICE_HOST=127.0.0.1 and KUBERNETES_SERVICE_PORT=<apiserver port>;
#   - a real ServiceAccount token from the TokenRequest API (kubectl create token),
#     the cluster CA and the namespace file at
#     /var/run/secrets/kubernetes.io/serviceaccount, on a tmpfs in a private mount
#     namespace (unshare --mount): the host's filesystem is untouched;
#   - the ServiceAccount (kcr-controller-manager in a namespace of its own) bound
#     only to what config/default binds it to (rendered by kubectl kustomize): each
#     binding's roleRef, with the Roles/ClusterRoles of the same rendering.
# Sufficient: the sample App gets its Deployment/Service/ConfigMap, status, the
# directory entry in the SA's namespace (read from the namespace file), the
# finalizer runs on delete, the Lease is acquired in the SA's namespace, a deleted
# Deployment comes back, and the operator logs no Forbidden.
# Tight: with the same token, kubectl gets Forbidden outside the RBAC and
# `auth can-i --list` shows no wildcard.
# SIGTERM -> exit 0 and the Lease released.
# Skips (exit 0, "SKIP: ...") only when mount namespaces are refused here.
set -euo pipefail
op=$1
kubeconfig=${KCR_TEST_KUBECONFIG:?the controlplane fixture sets KCR_TEST_KUBECONFIG}
root=$(cd "$(dirname "$0")/../.." && pwd)
cluster=$(cd "$(dirname "$kubeconfig")" && pwd)
# shellcheck disable=SC2012 # one version directory
kubectl_bin=$(ls "${KCR_CACHE:-$HOME/.cache/kcr}"/k8s/*/bin/kubectl | tail -n 1)
port=$(sed -n 's/^kube-apiserver=//p' "$cluster/run/ports")
ca=$cluster/pki/ca.crt
server=https://127.0.0.1:$port
sa=kcr-controller-manager
lease=kcr-operator.kcr.dev
ns=kcr-ic-$$     # the App's namespace
opns=kcr-ic-op-$$ # the ServiceAccount's (the operator's) namespace
suffix=kcr-ic-$$  # binding names
work=$(mktemp -d)
pid=
bindings=()
created_roles=()
k() { "$kubectl_bin" --kubeconfig "$kubeconfig" "$@"; }
# ksa: kubectl as the ServiceAccount, with nothing but the token.
ksa() {
  env -u KUBECONFIG "$kubectl_bin" --kubeconfig /dev/null --server "$server" \
    --certificate-authority "$ca" --token "$(cat "$work/sa/token")" "$@"
}
cleanup() {
  if [ -n "$pid" ]; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  # The tmpfs lived in the operator's mount namespace: it went away with it.
  for b in "${bindings[@]}"; do k delete "$b" --ignore-not-found >/dev/null 2>&1 || true; done
  for r in "${created_roles[@]}"; do k delete "$r" --ignore-not-found >/dev/null 2>&1 || true; done
  k delete ns "$ns" "$opns" --wait=false >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- operator log (tail)" >&2
  tail -n 40 "$work/operator.log" >&2 || true
  exit 1
}
# wait_for SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds.
. "$(dirname "$0")/wait_lib.sh" # wait_for SECONDS DESCRIPTION COMMAND...
jp() { k -n "$ns" get "$1" -o "jsonpath=$2" 2>/dev/null; }
eq() { [ "$(jp "$1" "$2")" = "$3" ]; }
lease_holder() { k -n "$opns" get lease "$lease" -o 'jsonpath={.spec.holderIdentity}' 2>/dev/null; }

[ -n "$port" ] || fail "no kube-apiserver port in $cluster/run/ports"
[ -f "$ca" ] || fail "no cluster CA at $ca"

# The capability: a private mount namespace with a tmpfs in it (root, or refused).
if ! unshare --mount --propagation private sh -c 'mount -t tmpfs tmpfs /mnt' 2>"$work/unshare.err"; then
  echo "SKIP: mount namespaces are refused here (unshare --mount: $(cat "$work/unshare.err")); the in-cluster run needs one"
  exit 0
fi

# --- RBAC: exactly what config/default binds the operator's ServiceAccount to ---
# Rendered as `make deploy` renders it (kubectl kustomize: kcr- names, kcr-system).
rdir=$work/rendered
bash "$root/test/integration/render_config.sh" "$kubectl_bin" "$root/config/default" "$rdir"
k apply -f "$root/config/crd/bases/kcr.dev_apps.yaml" >/dev/null
# kubectl wait fails at once while the new CRD has no status yet: retry.
for _ in 1 2 3 4 5 6 7 8 9; do
  k wait --for=condition=Established crd/apps.kcr.dev --timeout=60s >/dev/null 2>&1 && break
  sleep 0.5
done
k wait --for=condition=Established crd/apps.kcr.dev --timeout=60s >/dev/null
k create ns "$ns" >/dev/null
k create ns "$opns" >/dev/null
k -n "$opns" create serviceaccount "$sa" >/dev/null
# kcr-system (the manifests' namespace) -> $opns, in Roles and binding subjects.
for f in "$rdir"/RoleBinding_*.yaml "$rdir"/ClusterRoleBinding_*.yaml; do
  read -r bkind rkind rname subj < <(k create --dry-run=client -o \
    'jsonpath={.kind} {.roleRef.kind} {.roleRef.name} {.subjects[*].name}{"\n"}' -f "$f")
  [ "$subj" = "$sa" ] || fail "$f binds '$subj', not only $sa"
  # The role it references, from the same rendering.
  rfile=$rdir/${rkind}_$rname.yaml
  [ -f "$rfile" ] || fail "$f references $rkind $rname, not in config/default"
  if [ "$rkind" = ClusterRole ] && ! k get clusterrole "$rname" >/dev/null 2>&1; then
    created_roles+=("clusterrole/$rname")
  fi
  sed "s/namespace: kcr-system\$/namespace: $opns/" "$rfile" | k apply -f - >/dev/null
  case "$bkind/$rkind" in
  ClusterRoleBinding/ClusterRole)
    k create clusterrolebinding "$suffix-$rname" --clusterrole="$rname" \
      --serviceaccount="$opns:$sa" >/dev/null
    bindings+=("clusterrolebinding/$suffix-$rname") ;;
  RoleBinding/Role)
    k -n "$opns" create rolebinding "$rname" --role="$rname" --serviceaccount="$opns:$sa" >/dev/null ;;
  RoleBinding/ClusterRole)
    k -n "$opns" create rolebinding "$rname" --clusterrole="$rname" --serviceaccount="$opns:$sa" >/dev/null ;;
  *) fail "$f: unexpected $bkind to $rkind" ;;
  esac
  echo "bound $sa to $rkind $rname ($bkind, from $(basename "$f"))"
done

# --- the Pod's service-account files, mounted in a private mount namespace -----
mkdir -p "$work/sa"
k -n "$opns" create token "$sa" --duration=1h >"$work/sa/token"
cp "$ca" "$work/sa/ca.crt"
printf '%s' "$opns" >"$work/sa/namespace"
# /var/run is often a symlink to /run; mount on the real path. When the secrets
# directory does not exist, a tmpfs over its parent (in the private namespace only)
# avoids creating anything on the host.
varrun=$(readlink -f /var/run)
if [ -d "$varrun/secrets" ]; then mnt=$varrun/secrets; else mnt=$varrun; fi
# shellcheck disable=SC2016 # expanded by the inner shell
unshare --mount --propagation private bash -c '
  set -e
  mount -t tmpfs -o mode=755 tmpfs "$1"
  d=/var/run/secrets/kubernetes.io/serviceaccount
  mkdir -p "$d"
  cp "$2/token" "$2/ca.crt" "$2/namespace" "$d/"
  exec env -i PATH=/usr/bin:/bin KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$3" \
    "$4" --leader-elect --health-probe-bind-address=127.0.0.1:0 --log-format=console
' incluster "$mnt" "$work/sa" "$port" "$op" >"$work/operator.log" 2>&1 &
pid=$!
wait_for 30 "the in-cluster config" grep -q 'REST config from in-cluster: server https://127.0.0.1:' "$work/operator.log"
grep -q "directory in namespace $opns" "$work/operator.log" ||
  wait_for 30 "the directory namespace from the namespace file" \
    grep -q "directory in namespace $opns" "$work/operator.log"
! grep -q 'using the system CA roots' "$work/operator.log" || fail "the mounted ca.crt was not used"
[ ! -e /var/run/secrets/kubernetes.io/serviceaccount/token ] ||
  [ "$(cat /var/run/secrets/kubernetes.io/serviceaccount/token)" != "$(cat "$work/sa/token")" ] ||
  fail "the token is visible on the host: the mount leaked"

# --- sufficient: the reduced scenario -------------------------------------------
wait_for 60 "the Lease in $opns" sh -c "[ -n \"\$('$kubectl_bin' --kubeconfig '$kubeconfig' -n '$opns' get lease '$lease' -o 'jsonpath={.spec.holderIdentity}')\" ]"
echo "lease $opns/$lease held by $(lease_holder)"
k -n "$ns" apply -f "$root/config/samples/kcr_v1alpha1_app.yaml" >/dev/null
uid=$(jp app/app-sample '{.metadata.uid}')
for obj in deploy/app-sample svc/app-sample cm/app-sample-config; do
  wait_for 30 "$obj" k -n "$ns" get "$obj"
  eq "$obj" '{.metadata.ownerReferences[0].uid}' "$uid" || fail "$obj ownerReference"
  eq "$obj" '{.metadata.labels.app\.kubernetes\.io/managed-by}' kcr-operator || fail "$obj labels"
done
entry() { k -n "$opns" get cm app-directory -o jsonpath='{.data}' 2>/dev/null | grep -q "$ns.app-sample"; }
wait_for 30 "the directory entry in $opns" entry
eq app/app-sample '{.metadata.finalizers[0]}' kcr.dev/directory || fail "finalizer"
gen=$(jp app/app-sample '{.metadata.generation}')
wait_for 30 "status.observedGeneration $gen" eq app/app-sample '{.status.observedGeneration}' "$gen"
wait_for 30 "status.url" eq app/app-sample '{.status.url}' "http://app-sample.$ns.svc:80"
# Drift: a deleted Deployment comes back (update/delete/create all exercised).
old=$(jp deploy/app-sample '{.metadata.uid}')
k -n "$ns" delete deploy app-sample --wait=false >/dev/null
recreated() { u=$(jp deploy/app-sample '{.metadata.uid}'); [ -n "$u" ] && [ "$u" != "$old" ]; }
wait_for 30 "the Deployment to be recreated" recreated
# The finalizer on delete.
k -n "$ns" delete app app-sample --timeout=60s >/dev/null || fail "the App was not deleted within 60s"
! entry || fail "the directory entry survived the App"
# An RBAC refusal reads 'is forbidden: User "..." cannot ...'; other refusals (an
# Event in a namespace being deleted by another test) say nothing about the RBAC.
if grep -q 'forbidden: User ' "$work/operator.log"; then
  grep 'forbidden: User ' "$work/operator.log" | head -n 5 >&2
  fail "the operator was refused something: the RBAC is not sufficient"
fi
echo "sufficient: reconciled, directory entry and finalizer in $opns, Lease acquired, no Forbidden"

# --- tight: the same token outside the RBAC ---------------------------------------
forbidden() { # DESCRIPTION KUBECTL-ARGS...
  local what=$1 out
  shift
  if out=$(ksa "$@" 2>&1); then fail "allowed with the operator's token: $what"; fi
  grep -q 'Forbidden\|forbidden' <<<"$out" || fail "$what: not Forbidden but: $out"
}
forbidden "get secrets -A" get secrets -A
forbidden "create clusterrolebinding" create clusterrolebinding "$suffix-escalate" \
  --clusterrole=cluster-admin --serviceaccount="$opns:$sa"
forbidden "list pods" get pods -n "$ns"
forbidden "delete an App" delete app anything -n "$ns"
forbidden "get nodes" get nodes
ksa get deploy -n "$ns" >/dev/null 2>&1 || fail "the token cannot even list Deployments"
cani() { ksa auth can-i "$@" 2>/dev/null || true; }
cannot() { [ "$(cani "$@")" = no ] || fail "auth can-i $*: not no"; }
cannot '*' '*' -n "$ns"
cannot '*' '*' -A
cannot get secrets -n "$ns"
cannot create pods -n "$ns"
cannot delete apps.kcr.dev -n "$ns"
cannot create apps.kcr.dev -n "$ns"
cannot update leases -n kube-system
cannot create roles -n "$opns"
cannot escalate clusterroles
[ "$(cani update leases -n "$opns")" = yes ] || fail "auth can-i update leases -n $opns: not yes"
[ "$(cani create deployments -n "$ns")" = yes ] || fail "auth can-i create deployments: not yes"
for n in "$ns" "$opns"; do
  ksa auth can-i --list -n "$n" >"$work/can-i.$n" || fail "auth can-i --list -n $n"
  # No * anywhere once the non-resource URLs ([/api/*] etc., discovery) are dropped.
  if sed -e 1d -e 's#\[/[^]]*\]##g' "$work/can-i.$n" | grep -q '\*'; then
    cat "$work/can-i.$n" >&2
    fail "a wildcard in auth can-i --list -n $n"
  fi
done
echo "tight: Forbidden outside the RBAC, no wildcard in auth can-i --list"

# --- SIGTERM: exit 0, Lease released ------------------------------------------------
kill -TERM "$pid"
rc=0
for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
kill -0 "$pid" 2>/dev/null && fail "operator still running 30s after SIGTERM"
wait "$pid" || rc=$?
pid=
[ "$rc" -eq 0 ] || fail "operator exited $rc after SIGTERM"
[ -z "$(lease_holder)" ] || fail "the Lease is still held by $(lease_holder) after SIGTERM"
grep -q "released lease $opns/$lease" "$work/operator.log" || fail "no 'released lease' in the log"
echo "operator in-cluster: ok"
