#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_operator_secure_metrics.sh OPERATOR_BIN: kcr-operator with kubebuilder's
# metrics settings (--metrics-secure left at its default true) against the local
# control plane, with curl as the scraper (issue 12):
#   it starts (it used to exit 2) and serves HTTPS with the certificate of
#   --metrics-cert-path/--metrics-cert-name/--metrics-cert-key (curl verifies it
#   against that certificate); a ServiceAccount bound to config/rbac's
#   kcr-metrics-reader gets 200 with its token, one without the binding 403, no
#   token and a garbage token 401; SIGTERM -> exit 0.
set -euo pipefail
op=$1
kubeconfig=${KCR_TEST_KUBECONFIG:?the controlplane fixture sets KCR_TEST_KUBECONFIG}
root=$(cd "$(dirname "$0")/../.." && pwd)
kubectl_bin=$(ls "${KCR_CACHE:-$HOME/.cache/kcr}"/k8s/*/bin/kubectl | tail -n 1)
ns=kcr-sm-$$
binding=kcr-it-sm-$$
work=$(mktemp -d)
pid=
k() { "$kubectl_bin" --kubeconfig "$kubeconfig" "$@"; }
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  k delete clusterrolebinding "$binding" --ignore-not-found >/dev/null 2>&1 || true
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

mkdir -p "$work/certs"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
  -subj /CN=kcr-metrics -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$work/certs/key.pem" -out "$work/certs/cert.pem" 2>/dev/null

k apply -f "$root/config/crd/bases/kcr.dev_apps.yaml" >/dev/null
# kcr-metrics-reader as config/default renders it (kcr- prefix).
bash "$root/test/integration/render_config.sh" "$kubectl_bin" "$root/config/default" "$work/rendered"
k apply -f "$work/rendered/ClusterRole_kcr-metrics-reader.yaml" >/dev/null
k create ns "$ns" >/dev/null
k -n "$ns" create serviceaccount reader >/dev/null
k -n "$ns" create serviceaccount nobody >/dev/null
k create clusterrolebinding "$binding" --clusterrole=kcr-metrics-reader \
  --serviceaccount="$ns:reader" >/dev/null
for _ in $(seq 1 100); do
  [ "$(k auth can-i get /metrics --as="system:serviceaccount:$ns:reader" 2>/dev/null)" = yes ] && break
  sleep 0.1
done
reader=$(k -n "$ns" create token reader)
nobody=$(k -n "$ns" create token nobody)

POD_NAMESPACE=$ns "$op" --kubeconfig "$kubeconfig" --namespace "$ns" \
  --health-probe-bind-address=127.0.0.1:0 --metrics-bind-address=127.0.0.1:0 \
  --metrics-cert-path "$work/certs" --metrics-cert-name cert.pem --metrics-cert-key key.pem \
  --log-format=console >"$work/operator.log" 2>&1 &
pid=$!
port=
for _ in $(seq 1 120); do
  port=$(sed -n 's/.*serving metrics over HTTPS (authenticated) on port \([0-9]*\).*/\1/p' \
    "$work/operator.log" | head -n 1)
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || fail "the operator exited: $(tail -n 3 "$work/operator.log")"
  sleep 0.25
done
[ -n "$port" ] || fail "no HTTPS metrics port in the log"

# status TOKEN: the HTTP status of a scrape, the certificate verified.
status() {
  local auth=()
  [ -n "$1" ] && auth=(-H "Authorization: Bearer $1")
  curl -sS -o "$work/body" -w '%{http_code}' --cacert "$work/certs/cert.pem" \
    --max-time 10 "${auth[@]}" "https://127.0.0.1:$port/metrics"
}
[ "$(status "")" = 401 ] || fail "no token: want 401"
[ "$(status garbage)" = 401 ] || fail "garbage token: want 401"
[ "$(status "$nobody")" = 403 ] || fail "unbound ServiceAccount: want 403"
[ "$(status "$reader")" = 200 ] || fail "metrics-reader ServiceAccount: want 200"
grep -q '^certwatcher_read_certificate_total 1$' "$work/body" || fail "certwatcher counter"
grep -q '^controller_runtime_reconcile_total' "$work/body" ||
  grep -q '^# TYPE controller_runtime_reconcile_total counter' "$work/body" ||
  fail "no controller metrics in the scrape"
echo "ok: 401 without or with a garbage token, 403 unbound, 200 for kcr-metrics-reader (port $port)"

kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "exit $rc after SIGTERM"
echo "ok: SIGTERM -> exit 0"
