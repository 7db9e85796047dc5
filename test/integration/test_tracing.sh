#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_tracing.sh OPERATOR_BIN [SPANS_OUT]: OpenTelemetry traces from
# kcr-operator through the apiserver to etcd, against a real collector
# (issue 14). Its own cluster (the apiserver must start with a tracing
# configuration) and its own collector, both on free loopback ports:
#   1. kcr-otelcol (scripts/build-otelcol.sh) with the OTLP receiver over gRPC
#      (for kube-apiserver and etcd) and HTTP (for kcr), writing what it
#      receives to a file;
#   2. scripts/cluster.sh up with KCR_TRACING_ENDPOINT = the gRPC port;
#   3. kcr-operator --tracing with OTEL_EXPORTER_OTLP_ENDPOINT = the HTTP port;
#   4. an App created with the kcr.dev/traceparent annotation of a "client"
#      trace. Then the exported spans must show, in that one trace: the App's
#      reconcile span as a child of the client's span, its API-request spans
#      as the reconcile's children, and the apiserver's spans for those
#      requests as their children (the admin kubeconfig is system:masters,
#      whose trace context the apiserver trusts);
#   5. the collector stopped: reconciles go on (a spec change reaches the
#      Deployment) and kcr_trace_spans_dropped_total rises.
# With SPANS_OUT, the exported spans are copied there (docs/observability.md
# draws its waterfall from them).
set -euo pipefail
op=$1
spans_out=${2:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/kcr-tracing-XXXXXX)
cluster=$work/cluster
col_pid=
op_pid=
cleanup() {
  [ -n "$op_pid" ] && { kill -KILL "$op_pid" 2>/dev/null || true; wait "$op_pid" 2>/dev/null || true; }
  [ -n "$col_pid" ] && { kill -KILL "$col_pid" 2>/dev/null || true; wait "$col_pid" 2>/dev/null || true; }
  "$root/scripts/cluster.sh" down "$cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- operator log (tail)" >&2
  tail -n 15 "$work/operator.log" 2>/dev/null >&2 || true
  echo "--- collector log (tail)" >&2
  tail -n 5 "$work/collector.log" 2>/dev/null >&2 || true
  exit 1
}
wait_for() { # SECONDS DESCRIPTION COMMAND...
  local secs=$1 what=$2
  shift 2
  for _ in $(seq 1 $((secs * 4))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.25
  done
  fail "timed out after ${secs}s waiting for $what"
}

otelcol=$("$root/scripts/build-otelcol.sh" --quiet | sed -n 's/^otelcol=//p')
[ -x "$otelcol" ] || fail "no collector binary"
read -r grpc_port http_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
spans=$work/spans.jsonl
cat >"$work/collector.yaml" <<EOF
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:$grpc_port
      http:
        endpoint: 127.0.0.1:$http_port
exporters:
  file:
    path: $spans
    flush_interval: 200ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
EOF
"$otelcol" --config="$work/collector.yaml" >"$work/collector.log" 2>&1 &
col_pid=$!
wait_for 30 "the collector" curl -s -o /dev/null "http://127.0.0.1:$http_port/"

KCR_TRACING_ENDPOINT=127.0.0.1:$grpc_port "$root/scripts/cluster.sh" up "$cluster" \
  >"$work/cluster.log" 2>&1 || { tail -n 20 "$work/cluster.log" >&2; fail "cluster up"; }
kubeconfig=$cluster/kubeconfig
k() { "$cluster/bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }
ns=kcr-tracing
k apply -f "$root/config/crd/bases/kcr.dev_apps.yaml" >/dev/null
# kubectl wait fails at once while the new CRD has no status yet: retry.
for _ in 1 2 3 4 5 6 7 8 9; do
  k wait --for=condition=Established crd/apps.kcr.dev --timeout=60s >/dev/null 2>&1 && break
  sleep 0.5
done
k wait --for=condition=Established crd/apps.kcr.dev --timeout=60s >/dev/null
k create ns "$ns" >/dev/null

OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$http_port OTEL_BSP_SCHEDULE_DELAY=200 \
  OTEL_BSP_EXPORT_TIMEOUT=1000 POD_NAMESPACE=$ns \
  "$op" --kubeconfig "$kubeconfig" --namespace "$ns" --tracing \
  --health-probe-bind-address=127.0.0.1:0 --metrics-bind-address=127.0.0.1:0 \
  --metrics-secure=false >"$work/operator.log" 2>&1 &
op_pid=$!
metrics_port=
for _ in $(seq 1 120); do
  metrics_port=$(sed -n 's/.*serving metrics over HTTP on port \([0-9]*\).*/\1/p' \
    "$work/operator.log" | head -n 1)
  [ -n "$metrics_port" ] && break
  kill -0 "$op_pid" 2>/dev/null || fail "the operator exited"
  sleep 0.25
done
[ -n "$metrics_port" ] || fail "no metrics port in the operator's log"

# The "client" trace the App's creation belongs to.
trace_id=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
client_span=$(python3 -c 'import secrets; print(secrets.token_hex(8))')
sed "s|^  name: app-sample|  name: app-sample\n  annotations:\n    kcr.dev/traceparent: 00-$trace_id-$client_span-01|" \
  "$root/config/samples/kcr_v1alpha1_app.yaml" | k -n "$ns" apply -f - >/dev/null
wait_for 60 "the Deployment" k -n "$ns" get deploy app-sample
wait_for 60 "status.url" sh -c "[ -n \"\$('$cluster/bin/kubectl' --kubeconfig '$kubeconfig' -n '$ns' get app app-sample -o jsonpath='{.status.url}')\" ]"

check_trace() {
  python3 - "$spans" "$trace_id" "$client_span" <<'EOF'
import json, sys
path, tid, client = sys.argv[1:]
spans = []
for line in open(path):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    for rs in d.get("resourceSpans", []):
        svc = next((a["value"].get("stringValue") for a in rs["resource"].get("attributes", [])
                    if a["key"] == "service.name"), "?")
        for ss in rs.get("scopeSpans", []):
            for s in ss.get("spans", []):
                s["service"] = svc
                spans.append(s)
mine = [s for s in spans if s["traceId"] == tid]
def attr(s, k):
    for a in s.get("attributes", []):
        if a["key"] == k:
            v = a["value"]
            return v.get("stringValue", v.get("intValue"))
recs = [s for s in mine if s["service"] == "kcr-operator" and s["name"].startswith("Reconcile")
        and s.get("parentSpanId") == client and attr(s, "k8s.object.name") == "app-sample"]
rec_ids = {s["spanId"] for s in recs}
reqs = [s for s in mine if s["service"] == "kcr-operator" and s["kind"] == 3
        and s.get("parentSpanId") in rec_ids]
req_ids = {s["spanId"] for s in reqs}
api = [s for s in mine if s["service"] == "apiserver" and s.get("parentSpanId") in req_ids]
api_ids = {s["spanId"] for s in mine if s["service"] == "apiserver"}
etcd = [s for s in mine if s["service"] == "etcd"]
cache = [s for s in mine if s["name"].startswith("cache ") and s.get("parentSpanId") in rec_ids]
answered = {s["parentSpanId"] for s in api}
print("spans %d, in the trace %d: reconciles %d, API requests %d (answered by the apiserver's "
      "spans: %d), apiserver %d, etcd %d, cache reads %d"
      % (len(spans), len(mine), len(recs), len(reqs), len(answered), len(api_ids), len(etcd),
         len(cache)))
ok = (recs and reqs and api and etcd and cache and
      any(attr(s, "http.request.method") == "POST" for s in reqs) and
      all(attr(s, "kcr.reconcile_id") for s in recs))
sys.exit(0 if ok else 1)
EOF
}
for _ in $(seq 1 40); do
  check_trace >"$work/check.out" 2>&1 && break
  sleep 0.5
done
cat "$work/check.out"
check_trace >/dev/null 2>&1 || fail "the trace is not stitched together: $(cat "$work/check.out")"
[ -n "$spans_out" ] && cp "$spans" "$spans_out"
# The operator's lines written inside the reconcile carry its trace id.
traced_lines=$(jq -c --arg t "$trace_id" 'select(.trace_id == $t and .span_id != null)' \
  "$work/operator.log" | wc -l)
echo "operator log lines in the trace: $traced_lines"
[ "$traced_lines" -gt 0 ] || fail "no log line carries the trace id"

dropped() {
  curl -s "http://127.0.0.1:$metrics_port/metrics" |
    sed -n 's/^kcr_trace_spans_dropped_total{reason="export_failed"} \([0-9.e+]*\)$/\1/p'
}
exported=$(curl -s "http://127.0.0.1:$metrics_port/metrics" |
  sed -n 's/^kcr_trace_spans_exported_total \([0-9.e+]*\)$/\1/p')
before=$(dropped)
echo "before the collector stops: exported $exported, dropped (export_failed) ${before:-none}"
[ -n "$before" ] || fail "no kcr_trace_spans_dropped_total series"

# 5. The collector goes away; reconciles go on.
kill -TERM "$col_pid"
wait "$col_pid" 2>/dev/null || true
col_pid=
t0=$(date +%s%N)
k -n "$ns" patch app app-sample --type=merge -p '{"spec":{"replicas":3}}' >/dev/null
wait_for 30 "the Deployment to follow the App" sh -c "[ \"\$('$cluster/bin/kubectl' --kubeconfig '$kubeconfig' -n '$ns' get deploy app-sample -o jsonpath='{.spec.replicas}')\" = 3 ]"
echo "reconciled the change in $((($(date +%s%N) - t0) / 1000000)) ms without a collector"
wait_for 20 "the drop counter to rise" sh -c "[ \"\$(curl -s http://127.0.0.1:$metrics_port/metrics | sed -n 's/^kcr_trace_spans_dropped_total{reason=\"export_failed\"} \([0-9]*\).*/\1/p')\" -gt ${before%.*} ]"
echo "after: dropped (export_failed) $(dropped)"
kill -TERM "$op_pid"
rc=0
wait "$op_pid" || rc=$?
op_pid=
[ "$rc" -eq 0 ] || fail "kcr-operator exited $rc after SIGTERM"
echo "PASS"
