#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_operator_e2e.sh OPERATOR_BIN: the App operator end to end against the local
# control plane, with kubectl as the client (issue 8):
#   sample applied -> Deployment, Service, ConfigMap with the labels and a
#   controller ownerReference, directory entry; kwok (the fixture's fake nodes)
#   runs the pods -> App Available with readyReplicas, nothing patched by hand; kubectl scale app; a config change
#   changes the pod-template hash; paused stops changes and says so; a deleted
#   Deployment is recreated; an unowned
#   same-named Deployment -> Degraded/NameConflict and left alone; unsetting port
#   deletes the Service and the directory entry; deleting the App runs the
#   finalizer and garbage collection removes the children; SIGTERM -> exit 0.
set -euo pipefail
. "$(dirname "$0")/operator_lib.sh" "$@"
ns=kcr-e2e-$$
opns=kcr-e2e-op-$$

install_crd
make_namespaces "$ns" "$opns"
# --namespace: this operator acts only on this test's Apps (other tests create Apps
# too); its directory lives in another namespace, outside the watched one.
start_operator "$ns" "$opns"

# 1. The sample: children with labels and a controller ownerReference.
k -n "$ns" apply -f "$root/config/samples/kcr_v1alpha1_app.yaml" >/dev/null
uid=$(jp app/app-sample '{.metadata.uid}')
wait_for 30 "the Deployment" k -n "$ns" get deploy app-sample
for obj in deploy/app-sample svc/app-sample cm/app-sample-config; do
  wait_for 30 "$obj" k -n "$ns" get "$obj"
  eq "$obj" '{.metadata.labels.app\.kubernetes\.io/managed-by}' kcr-operator || fail "$obj labels"
  eq "$obj" '{.metadata.labels.app\.kubernetes\.io/instance}' app-sample || fail "$obj labels"
  eq "$obj" '{.metadata.ownerReferences[0].uid}' "$uid" || fail "$obj ownerReference"
  eq "$obj" '{.metadata.ownerReferences[0].controller}' true || fail "$obj controller ref"
done
wait_for 30 "the directory entry" \
  sh -c "'$kubectl_bin' --kubeconfig '$kubeconfig' -n '$opns' get cm app-directory -o jsonpath='{.data}' | grep -q '$ns.app-sample'"
eq app/app-sample '{.metadata.finalizers[0]}' kcr.dev/directory || fail "finalizer"
wait_for 30 "status.url" eq app/app-sample '{.status.url}' "http://app-sample.$ns.svc:80"

# 2. The fixture runs kube-scheduler and kwok: the pods are scheduled onto fake
# nodes and marked Running and Ready there, the Deployment becomes Available,
# then the App. Nothing here touches a Pod.
kwok_nodes=$(k get nodes -l type=kwok -o name | wc -l)
[ "$kwok_nodes" -ge 1 ] || fail "no kwok nodes: the fixture should start the cluster with --kwok"
wait_for 90 "App Available" eq app/app-sample '{.status.conditions[?(@.type=="Available")].status}' True
wait_for 30 "Deployment availableReplicas 2" eq deploy/app-sample '{.status.availableReplicas}' 2
eq app/app-sample '{.status.readyReplicas}' 2 || fail "readyReplicas"

# 3. kubectl scale goes through the scale subresource to the Deployment.
k -n "$ns" scale app/app-sample --replicas=3 >/dev/null
wait_for 30 "Deployment replicas 3" eq deploy/app-sample '{.spec.replicas}' 3

# 4. A config change rolls the pod template (new hash).
hash1=$(jp deploy/app-sample '{.spec.template.metadata.annotations.kcr\.dev/config-hash}')
k -n "$ns" patch app app-sample --type=merge -p '{"spec":{"config":{"index.html":"v2"}}}' >/dev/null
changed() { [ "$(jp deploy/app-sample '{.spec.template.metadata.annotations.kcr\.dev/config-hash}')" != "$hash1" ]; }
wait_for 30 "a new config hash" changed
wait_for 30 "the ConfigMap content" eq cm/app-sample-config '{.data.index\.html}' v2

# 4b. paused: spec changes stop reaching the children, and a condition says so.
k -n "$ns" patch app app-sample --type=merge -p '{"spec":{"paused":true}}' >/dev/null
wait_for 30 "the Paused condition" eq app/app-sample '{.status.conditions[?(@.type=="Paused")].status}' True
k -n "$ns" patch app app-sample --type=merge -p '{"spec":{"image":"nginx:1.28"}}' >/dev/null
sleep 2
eq deploy/app-sample '{.spec.template.spec.containers[0].image}' nginx:1.27 || fail "a paused App changed its Deployment"
k -n "$ns" patch app app-sample --type=merge -p '{"spec":{"paused":false}}' >/dev/null
wait_for 30 "the new image after unpausing" eq deploy/app-sample '{.spec.template.spec.containers[0].image}' nginx:1.28
wait_for 30 "the Paused condition to go" eq app/app-sample '{.status.conditions[?(@.type=="Paused")].status}' ""

# 5. Drift: a deleted Deployment comes back.
old=$(jp deploy/app-sample '{.metadata.uid}')
k -n "$ns" delete deploy app-sample --wait=false >/dev/null
recreated() { u=$(jp deploy/app-sample '{.metadata.uid}'); [ -n "$u" ] && [ "$u" != "$old" ]; }
wait_for 30 "the Deployment to be recreated" recreated

# 6. An unowned Deployment of the same name is never taken over.
k -n "$ns" create deployment other --image=busybox >/dev/null
cat <<EOF | k -n "$ns" apply -f - >/dev/null
apiVersion: kcr.dev/v1alpha1
kind: App
metadata: {name: other}
spec: {image: "nginx:1.27"}
EOF
wait_for 30 "Degraded/NameConflict" eq app/other '{.status.conditions[?(@.type=="Degraded")].reason}' NameConflict
eq deploy/other '{.spec.template.spec.containers[0].image}' busybox || fail "the unowned Deployment was changed"
# The refusal and the creations are recorded as Events regarding the Apps.
conflict_event() { k -n "$ns" get events.events.k8s.io -o jsonpath='{.items[*].reason}' | grep -q NameConflict; }
wait_for 30 "a NameConflict event" conflict_event
created_event() { k -n "$ns" get events.events.k8s.io -o jsonpath='{.items[*].reason}' | grep -q Created; }
wait_for 30 "a Created event" created_event
[ -z "$(jp deploy/other '{.metadata.ownerReferences}')" ] || fail "the unowned Deployment got an owner"

# 7. Unsetting port deletes the Service and the directory entry.
k -n "$ns" patch app app-sample --type=json -p '[{"op":"remove","path":"/spec/port"}]' >/dev/null
svc_gone() { ! k -n "$ns" get svc app-sample >/dev/null 2>&1; }
wait_for 30 "the Service to go" svc_gone
entry_gone() { ! k -n "$opns" get cm app-directory -o jsonpath='{.data}' | grep -q "$ns.app-sample"; }
wait_for 30 "the directory entry to go" entry_gone
entry_back() { ! entry_gone; }
k -n "$ns" patch app app-sample --type=merge -p '{"spec":{"port":8080}}' >/dev/null
wait_for 30 "the entry back" entry_back

# 8. Deleting the App runs the finalizer; garbage collection removes the children.
k -n "$ns" delete app app-sample --timeout=60s >/dev/null
entry_gone || fail "the directory entry survived the App"
children_gone() { ! k -n "$ns" get deploy/app-sample cm/app-sample-config >/dev/null 2>&1; }
wait_for 60 "garbage collection of the children" children_gone

# The other App too, while the operator still runs to release its finalizer (an App
# left with it would hold its namespace in Terminating).
k -n "$ns" delete app other --timeout=60s >/dev/null

# 9. SIGTERM: graceful stop, exit 0.
stop_operator
echo "operator e2e: ok"
