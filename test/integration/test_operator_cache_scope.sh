#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_operator_cache_scope.sh OPERATOR_BIN: the operator caches only the children
# it labels (issue 16, bug 11: it cached every ConfigMap, Deployment and Service in
# the cluster, and 2000 unrelated 20 KB ConfigMaps took it from 81 to 123 MB).
#   - The operator watches all namespaces and reconciles an App (its informers are
#     up and synced), then its VmRSS is sampled.
#   - N unrelated ConfigMaps of ~20 KB each (KCR_SCOPE_COUNT, default 500: 10 MB of
#     data) are created in another namespace, and VmRSS is sampled for a few seconds
#     after they all exist (a cache holding them would have them by then: the watch
#     delivers each within milliseconds).
#   - VmRSS must not grow by more than KCR_SCOPE_MAX_KB (default 3072 kB, a third of
#     the data), and a second App must still reconcile.
# RUN_SERIAL (CMakeLists.txt): an operator watching all namespaces would race other
# tests' operators for their Apps' finalizers and directory entries.
set -euo pipefail
. "$(dirname "$0")/operator_lib.sh" "$@"
count=${KCR_SCOPE_COUNT:-500}
max_kb=${KCR_SCOPE_MAX_KB:-3072}
ns=kcr-scope-$$
opns=kcr-scope-op-$$
noise=kcr-scope-noise-$$
apps_ns=$ns
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }
# max_rss SECONDS: the largest VmRSS seen, sampled every 0.25 s.
max_rss() {
  local m=0 r
  for _ in $(seq 1 $(($1 * 4))); do
    r=$(rss_kb)
    [ "$r" -gt "$m" ] && m=$r
    sleep 0.25
  done
  echo "$m"
}
app() { # NAME: an App with a port (Deployment and Service) and a config (ConfigMap)
  cat <<EOF | k -n "$ns" apply -f - >/dev/null
apiVersion: kcr.dev/v1alpha1
kind: App
metadata: {name: $1}
spec: {image: "nginx:1.27", replicas: 1, port: 80, config: {index.html: hello}}
EOF
}
reconciled() { # NAME
  local uid
  uid=$(jp "app/$1" '{.metadata.uid}')
  for obj in "deploy/$1" "svc/$1" "cm/$1-config"; do
    eq "$obj" '{.metadata.ownerReferences[0].uid}' "$uid" || return 1
  done
  eq "app/$1" '{.status.observedGeneration}' "$(jp "app/$1" '{.metadata.generation}')"
}

install_crd
make_namespaces "$ns" "$opns" "$noise"

# All namespaces: the case where every ConfigMap in the cluster used to be cached.
start_operator "" "$opns"
app scope-a
wait_for 60 "App scope-a reconciled" reconciled scope-a
sleep 3 # let start-up allocations settle
before=$(max_rss 2)

# ~20 KB of data per ConfigMap (15000 random bytes in base64), one List, one kubectl.
blob=$(head -c 15000 /dev/urandom | base64 -w0)
{
  echo '{"apiVersion":"v1","kind":"List","items":['
  for i in $(seq 1 "$count"); do
    [ "$i" -gt 1 ] && echo ','
    printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"noise-%d","labels":{"app.kubernetes.io/name":"noise"}},"data":{"blob":"%s"}}' "$i" "$blob"
  done
  echo ']}'
} >"$work/noise.json"
t0=$(date +%s)
k -n "$noise" create -f "$work/noise.json" >/dev/null
have=$(k -n "$noise" get cm -l app.kubernetes.io/name=noise -o name | wc -l)
[ "$have" -eq "$count" ] || fail "created $have ConfigMaps, not $count"
echo "created $count ConfigMaps of ~$((${#blob} / 1024)) KB in $(($(date +%s) - t0)) s"
after=$(max_rss 5)
grow=$((after - before))
echo "operator VmRSS: ${before} kB before, ${after} kB after (growth ${grow} kB, bound ${max_kb} kB)"
[ "$grow" -le "$max_kb" ] ||
  fail "VmRSS grew by ${grow} kB with $count unrelated ConfigMaps (bound ${max_kb} kB): they are cached"

# It still reconciles.
app scope-b
wait_for 60 "App scope-b reconciled" reconciled scope-b
k -n "$ns" delete app scope-a scope-b --timeout=60s >/dev/null || fail "the Apps were not deleted"
stop_operator
echo "operator cache scope: ok"
