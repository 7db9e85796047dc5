#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_operator_logs.sh OPERATOR_BIN: kcr-operator's logs against the local control
# plane (issue 11, "the operator's logs"):
#   - the operator authenticates with a bearer token only: a ServiceAccount token
#     from the TokenRequest API (kubectl create token) in a kubeconfig of its own;
#   - it runs at the most verbose level (--zap-log-level=10) with KCR_CURL_VERBOSE=1,
#     so libcurl's trace, request headers included, goes through the logger;
#   - it reconciles the sample App, then stops on SIGTERM.
# Then the log is checked:
#   - the token appears nowhere (nor its signature, its longest part);
#   - the token did reach the logger: request-header lines carry the authorization
#     key with the value [REDACTED] (so the check above is not vacuous: take the
#     redaction out of src/util/log.c and this test fails);
#   - every line is one JSON object;
#   - the reconcile lines carry controller, controllerGroup, controllerKind,
#     namespace, name and reconcileID as JSON fields, with none of them pasted
#     into msg.
set -euo pipefail
op=$1
kubeconfig=${KCR_TEST_KUBECONFIG:?the controlplane fixture sets KCR_TEST_KUBECONFIG}
root=$(cd "$(dirname "$0")/../.." && pwd)
cluster=$(cd "$(dirname "$kubeconfig")" && pwd)
# shellcheck disable=SC2012 # one version directory
kubectl_bin=$(ls "${KCR_CACHE:-$HOME/.cache/kcr}"/k8s/*/bin/kubectl | tail -n 1)
port=$(sed -n 's/^kube-apiserver=//p' "$cluster/run/ports")
ca=$cluster/pki/ca.crt
ns=kcr-logs-$$
opns=kcr-logs-op-$$
sa=kcr-logs
binding=kcr-logs-$$
work=$(mktemp -d)
pid=
k() { "$kubectl_bin" --kubeconfig "$kubeconfig" "$@"; }
cleanup() {
  if [ -n "$pid" ]; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  k delete clusterrolebinding "$binding" --ignore-not-found >/dev/null 2>&1 || true
  k delete ns "$ns" "$opns" --wait=false >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- operator log (tail, token lines masked)" >&2
  tail -n 20 "$work/operator.log" 2>/dev/null | sed "s/${token:-no-token-yet}/<TOKEN>/g" >&2 || true
  exit 1
}
# wait_for SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds.
. "$(dirname "$0")/wait_lib.sh" # wait_for SECONDS DESCRIPTION COMMAND...
jp() { k -n "$ns" get "$1" -o "jsonpath=$2" 2>/dev/null; }

[ -n "$port" ] || fail "no kube-apiserver port in $cluster/run/ports"
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
k create clusterrolebinding "$binding" --clusterrole=cluster-admin \
  --serviceaccount="$opns:$sa" >/dev/null

# A kubeconfig whose only credential is the bearer token.
token=$(k -n "$opns" create token "$sa" --duration=1h)
[ "${#token}" -gt 100 ] || fail "kubectl create token gave ${#token} bytes"
signature=${token##*.}
kc=$work/kubeconfig
kk() { "$kubectl_bin" --kubeconfig "$kc" "$@"; }
kk config set-cluster it --server "https://127.0.0.1:$port" --certificate-authority "$ca" \
  --embed-certs >/dev/null
kk config set-credentials sa --token "$token" >/dev/null
kk config set-context it --cluster it --user sa --namespace "$opns" >/dev/null
kk config use-context it >/dev/null
grep -q "client-certificate\|client-key" "$kc" && fail "the kubeconfig has a client certificate"
kk auth whoami -o jsonpath='{.status.userInfo.username}' 2>/dev/null | grep -q "serviceaccount:$opns:$sa" ||
  fail "the token kubeconfig does not authenticate as the ServiceAccount"

KCR_CURL_VERBOSE=1 POD_NAMESPACE=$opns "$op" --kubeconfig "$kc" \
  --health-probe-bind-address=127.0.0.1:0 --namespace "$ns" --zap-log-level=10 \
  >"$work/operator.log" 2>&1 &
pid=$!

k -n "$ns" apply -f "$root/config/samples/kcr_v1alpha1_app.yaml" >/dev/null
wait_for 60 "the Deployment" k -n "$ns" get deploy app-sample
wait_for 60 "status.url" sh -c "[ \"\$('$kubectl_bin' --kubeconfig '$kubeconfig' -n '$ns' get app app-sample -o jsonpath='{.status.url}')\" = 'http://app-sample.$ns.svc:80' ]"
# Give the status write's own reconcile a moment to be logged, then stop.
sleep 1
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" -eq 0 ] || fail "kcr-operator exited $rc after SIGTERM"
log=$work/operator.log
lines=$(wc -l <"$log")
echo "operator wrote $lines log lines ($(wc -c <"$log") bytes)"

# 1. No credential, anywhere.
if grep -qF "$token" "$log"; then
  fail "the bearer token appears in the log ($(grep -cF "$token" "$log") lines)"
fi
if grep -qF "$signature" "$log"; then
  fail "the token's signature appears in the log"
fi

# 2. One JSON object per line.
bad=$(jq -R 'fromjson? | objects | 1' "$log" | wc -l)
[ "$bad" -eq "$lines" ] || fail "only $bad of $lines lines are JSON objects"

# 3. The token went through the logger: libcurl's request headers, redacted.
redacted=$(jq -c 'select(.logger == "curl" and .msg == "request header" and
  ((.authorization // .Authorization) == "[REDACTED]"))' "$log" | wc -l)
[ "$redacted" -gt 0 ] || fail "no redacted authorization header in the curl trace: is KCR_CURL_VERBOSE routed through the logger?"
echo "redacted authorization headers in the trace: $redacted"

# 4. Reconcile lines: controller-runtime's keys as fields, none in msg.
rec_filter='select(.logger == "controller" and .reconcileID != null)'
nrec=$(jq -c "$rec_filter" "$log" | wc -l)
[ "$nrec" -gt 0 ] || fail "no reconcile line with a reconcileID field"
ok=$(jq -c "$rec_filter | select(.controller == \"app\" and .controllerGroup == \"kcr.dev\" and
  .controllerKind == \"App\" and .namespace == \"$ns\" and .name == \"app-sample\" and
  (.reconcileID | test(\"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$\")))" \
  "$log" | wc -l)
[ "$ok" -eq "$nrec" ] || fail "$((nrec - ok)) of $nrec reconcile lines lack the fields"
pasted=$(jq -c 'select(.msg | test("(controller|namespace|name|reconcileID)="))' "$log" | wc -l)
[ "$pasted" -eq 0 ] || fail "$pasted lines paste key=value into msg"
created=$(jq -c "$rec_filter | select(.msg | startswith(\"created Deployment\"))" "$log" | wc -l)
[ "$created" -ge 1 ] || fail "no 'created Deployment' reconcile line"
successful=$(jq -c "$rec_filter | select(.msg == \"Reconcile successful\")" "$log" | wc -l)
[ "$successful" -ge 1 ] || fail "no 'Reconcile successful' line at V(5)"
ids=$(jq -r "$rec_filter | .reconcileID" "$log" | sort -u | wc -l)
echo "reconcile lines: $nrec ($ids reconciles), all with controller, controllerGroup, controllerKind, namespace, name, reconcileID"
echo "PASS"
