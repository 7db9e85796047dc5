#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_operator_webhooks.sh OPERATOR_BIN: kcr-operator's App webhooks called by
# the real kube-apiserver (issue 12). The operator serves HTTPS on a free port
# (--webhook-bind-address=127.0.0.1:0) with a certificate signed by a test CA,
# from a directory laid out as a Secret volume (tls.crt -> ..data/tls.crt).
# kube-apiserver reaches it through clientConfig.url with that CA as caBundle
# (no kube-proxy here): a ValidatingWebhookConfiguration and a
# MutatingWebhookConfiguration limited to the test's namespace, and the CRD
# patched to serve v1beta1 with conversion strategy Webhook (restored on exit).
# Checks: --enable-http2 is accepted with a warning that HTTP/2 is not served;
# then, through kubectl:
#   - an invalid App is refused with the webhook's message (a config key
#     "..data", which the schema's CEL rule lets through; a port change while
#     paused), and an untagged image gets the webhook's warning;
#   - the defaulted resources appear on an App created without them;
#   - an App created as v1alpha1 reads as v1beta1 (spec.service, portName from
#     the annotation), is written back as v1beta1 and reads as v1alpha1 with
#     nothing lost; a change made through v1beta1 shows in v1alpha1;
#   - `get apps.v1beta1.kcr.dev` and `apps.v1alpha1.kcr.dev` list the same
#     objects (names, uids, resourceVersions);
#   - the certificate is replaced on disk (the ..data symlink swapped): the
#     served serial changes without a restart, and the API server's calls go on;
#   - the webhook server and the secure metrics server survive malformed TLS
#     handshakes, slowloris clients and 1000 connections at once, and answer
#     meanwhile (a review; a scrape without a token: 401).
# RUN_SERIAL: while v1beta1 is served, kubectl elsewhere prefers it.
set -euo pipefail
op=$1
kubeconfig=${KCR_TEST_KUBECONFIG:?the controlplane fixture sets KCR_TEST_KUBECONFIG}
root=$(cd "$(dirname "$0")/../.." && pwd)
kubectl_bin=$(ls "${KCR_CACHE:-$HOME/.cache/kcr}"/k8s/*/bin/kubectl | tail -n 1)
ns=kcr-wh-$$
cfg=kcr-it-wh-$$
work=$(mktemp -d)
pid=
crd_patched=
k() { "$kubectl_bin" --kubeconfig "$kubeconfig" --cache-dir "$work/kcache" "$@"; }
restore_crd() {
  [ -n "$crd_patched" ] || return 0
  k patch crd apps.kcr.dev --type=json -p "[
    {\"op\":\"replace\",\"path\":\"/spec/versions/$beta_index/served\",\"value\":false},
    {\"op\":\"replace\",\"path\":\"/spec/conversion\",\"value\":{\"strategy\":\"None\"}}]" \
    >/dev/null 2>&1 || true
  crd_patched=
}
cleanup() {
  k delete validatingwebhookconfiguration "$cfg" --ignore-not-found >/dev/null 2>&1 || true
  k delete mutatingwebhookconfiguration "$cfg" --ignore-not-found >/dev/null 2>&1 || true
  if [ -n "$pid" ]; then
    k -n "$ns" delete apps.v1alpha1.kcr.dev --all --timeout=30s >/dev/null 2>&1 || true
    kill "$pid" 2>/dev/null || true
  fi
  for a in $(k -n "$ns" get apps.v1alpha1.kcr.dev -o name 2>/dev/null); do
    k -n "$ns" patch "$a" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
  done
  restore_crd
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
ok() { echo "ok: $*"; }
# wait_for SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds.
wait_for() {
  local t=$1 what=$2
  shift 2
  for _ in $(seq 1 $((t * 4))); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.25
  done
  echo "last try: $("$@" 2>&1 | tail -n 5)" >&2
  fail "timed out after ${t}s waiting for $what"
}

# ---- certificates: two CAs, leaves for 127.0.0.1 with chosen serials ----
mkdir -p "$work/pki" "$work/certs"
ca() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj "/CN=kcr-it-$1" -keyout "$work/pki/$1.key" -out "$work/pki/$1.crt" 2>/dev/null
}
# leaf CA SERIAL DIR: a serving certificate signed by CA in DIR/tls.crt, tls.key.
leaf() {
  mkdir -p "$3"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=kcr-webhook \
    -keyout "$3/tls.key" -out "$3/tls.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
    >"$3/ext"
  openssl x509 -req -in "$3/tls.csr" -CA "$work/pki/$1.crt" -CAkey "$work/pki/$1.key" \
    -set_serial "$2" -days 1 -extfile "$3/ext" -out "$3/tls.crt" 2>/dev/null
  rm -f "$3/tls.csr" "$3/ext"
}
# swap DIR: point the certificate directory's ..data at DIR, atomically, as
# the kubelet updates a Secret volume.
swap() {
  ln -sfn "$1" "$work/certs/..data_tmp"
  mv -T "$work/certs/..data_tmp" "$work/certs/..data"
}
ca ca1
leaf ca1 0x1001 "$work/certs/..v1"
swap "$work/certs/..v1"
ln -s ..data/tls.crt "$work/certs/tls.crt"
ln -s ..data/tls.key "$work/certs/tls.key"
ca1=$(base64 -w0 "$work/pki/ca1.crt")

# ---- --enable-http2 is accepted and said to change nothing ----
out=$("$op" --enable-http2 --kubeconfig "$work/none" --log-format=console 2>&1) &&
  fail "started without a kubeconfig"
grep -q 'WARN.*--enable-http2: HTTP/2 is not served' <<<"$out" ||
  fail "no HTTP/2 warning with --enable-http2: $out"
ok "--enable-http2 accepted, with the warning that HTTP/2 is not served"

# ---- the operator ----
k apply -f "$root/config/crd/bases/kcr.dev_apps.yaml" >/dev/null
k create ns "$ns" >/dev/null
POD_NAMESPACE=$ns "$op" --kubeconfig "$kubeconfig" --namespace "$ns" \
  --health-probe-bind-address=127.0.0.1:0 --metrics-bind-address=127.0.0.1:0 \
  --webhook-bind-address=127.0.0.1:0 --webhook-cert-path "$work/certs" \
  --enable-http2=false --log-format=console >"$work/operator.log" 2>&1 &
pid=$!
port=
for _ in $(seq 1 120); do
  port=$(sed -n 's/.*serving webhooks on port \([0-9]*\).*/\1/p' "$work/operator.log" | head -n 1)
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || fail "the operator exited: $(tail -n 3 "$work/operator.log")"
  sleep 0.25
done
[ -n "$port" ] || fail "no webhook port in the log"
mport=$(sed -n 's/.*serving metrics over HTTPS (authenticated) on port \([0-9]*\).*/\1/p' \
  "$work/operator.log" | head -n 1)
[ -n "$mport" ] || fail "no metrics port in the log"
ok "webhooks on 127.0.0.1:$port, secure metrics on $mport"

# serial: the serial of the certificate the webhook server presents now.
serial() {
  openssl s_client -connect "127.0.0.1:$port" -servername 127.0.0.1 </dev/null 2>/dev/null |
    openssl x509 -noout -serial | sed 's/serial=//'
}
[ "$(serial)" = 1001 ] || fail "served serial $(serial), want 1001"

# ---- the webhook configurations and the CRD's conversion ----
# webhooks KIND NAME PATH CA: a webhook configuration for Apps in $ns.
webhooks() {
  cat <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: $1
metadata: {name: $cfg}
webhooks:
  - name: $2
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    matchPolicy: Equivalent
    timeoutSeconds: 10
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $ns}}
    rules:
      - {apiGroups: [kcr.dev], apiVersions: [v1alpha1], operations: [CREATE, UPDATE],
         resources: [apps], scope: Namespaced}
    clientConfig: {url: "https://127.0.0.1:$port$3", caBundle: "$4"}
EOF
}
apply_webhooks() {
  {
    webhooks ValidatingWebhookConfiguration vapp.kcr.dev /validate-kcr-dev-v1alpha1-app "$1"
    echo ---
    webhooks MutatingWebhookConfiguration mapp.kcr.dev /mutate-kcr-dev-v1alpha1-app "$1"
  } | k apply -f - >/dev/null
}
apply_webhooks "$ca1"
names=$(k get crd apps.kcr.dev -o jsonpath='{.spec.versions[*].name}')
beta_index=0
for v in $names; do
  [ "$v" = v1beta1 ] && break
  beta_index=$((beta_index + 1))
done
[ "$beta_index" -lt "$(wc -w <<<"$names")" ] || fail "the CRD has no v1beta1 ($names)"
# conversion CA: the CRD's conversion webhook with caBundle CA.
conversion() {
  k patch crd apps.kcr.dev --type=json -p "[
    {\"op\":\"replace\",\"path\":\"/spec/versions/$beta_index/served\",\"value\":true},
    {\"op\":\"replace\",\"path\":\"/spec/conversion\",\"value\":{\"strategy\":\"Webhook\",
      \"webhook\":{\"conversionReviewVersions\":[\"v1\"],\"clientConfig\":{
        \"url\":\"https://127.0.0.1:$port/convert\",\"caBundle\":\"$1\"}}}}]" >/dev/null
}
crd_patched=1
conversion "$ca1"

app() { # app NAME SPEC-JSON [ANNOTATIONS-JSON]: a v1alpha1 App as JSON.
  local ann=${3:-}
  [ -n "$ann" ] || ann='{}'
  printf '{"apiVersion":"kcr.dev/v1alpha1","kind":"App","metadata":{"name":"%s","namespace":"%s","annotations":%s},"spec":%s}' \
    "$1" "$ns" "$ann" "$2"
}
# The API server picks up webhook configurations asynchronously: wait until a
# server-side dry run is refused by the webhook.
refused_dry_run() {
  app probe '{"image":"x:1","config":{"..data":"x"}}' |
    k create --dry-run=server -f - >"$work/dry-run.out" 2>&1
  grep -q 'denied the request' "$work/dry-run.out" || { cat "$work/dry-run.out"; return 1; }
}
# 60 s: on this shared machine the first call has taken more than 30 s once.
wait_for 60 "the validating webhook to be called" refused_dry_run

# ---- validation ----
out=$(app bad '{"image":"nginx:1.27","config":{"..data":"x","ok.txt":"y"}}' | k create -f - 2>&1) &&
  fail "an App with config key ..data was admitted"
grep -q 'admission webhook "vapp.kcr.dev" denied the request: spec.config\["..data"\]: not a valid file name' \
  <<<"$out" || fail "refusal without the webhook's message: $out"
ok "config key ..data refused: $(grep -o 'spec.config.*' <<<"$out" | head -c 100)..."

out=$(app warned '{"image":"nginx","port":80,"paused":true}' | k create -f - 2>&1) ||
  fail "a paused App was refused: $out"
grep -q 'Warning: spec.image: "nginx" has no tag' <<<"$out" || fail "no image warning: $out"
ok "untagged image admitted with the webhook's warning"
out=$(k -n "$ns" patch apps.v1alpha1.kcr.dev warned --type=merge -p '{"spec":{"port":8080}}' 2>&1) &&
  fail "a port change while paused was admitted"
grep -q 'spec.port: cannot change from 80 to 8080 while spec.paused is true' <<<"$out" ||
  fail "port-while-paused refusal without the webhook's message: $out"
k -n "$ns" patch apps.v1alpha1.kcr.dev warned --type=merge \
  -p '{"spec":{"port":8080,"paused":false}}' >/dev/null || fail "unpause with a new port refused"
ok "port change while paused refused; allowed together with unpausing"

# ---- defaulting ----
app plain '{"image":"nginx:1.27"}' | k create -f - >/dev/null 2>&1 || fail "plain App refused"
[ "$(k -n "$ns" get apps.v1alpha1.kcr.dev plain -o jsonpath='{.spec.resources.requests.cpu}/{.spec.resources.requests.memory}')" = 10m/64Mi ] ||
  fail "defaulted requests missing: $(k -n "$ns" get apps.v1alpha1.kcr.dev plain -o jsonpath='{.spec}')"
ok "an App without resources gets requests 10m/64Mi"

# ---- conversion ----
app web '{"image":"nginx:1.27","replicas":2,"port":80,"env":[{"name":"GREETING","value":"hi"}],"config":{"index.html":"<h1>hi</h1>"},"resources":{"limits":{"memory":"64Mi"}}}' \
  '{"conversion.kcr.dev/service-port-name":"web","team":"shop"}' | k create -f - >/dev/null 2>&1 ||
  fail "web refused"
wait_for 60 "web's status.url" sh -c "[ -n \"\$('$kubectl_bin' --kubeconfig '$kubeconfig' -n '$ns' get apps.v1alpha1.kcr.dev web -o jsonpath='{.status.url}')\" ]"
wait_for 30 "v1beta1 in discovery" k -n "$ns" get apps.v1beta1.kcr.dev web
# The operator goes on writing status while kwok brings the pods up: read both
# versions of one resourceVersion.
same_rv() {
  k -n "$ns" get apps.v1alpha1.kcr.dev web -o json >"$work/alpha1.json" &&
    k -n "$ns" get apps.v1beta1.kcr.dev web -o json >"$work/beta.json" &&
    [ "$(jq -r .metadata.resourceVersion "$work/alpha1.json")" = \
      "$(jq -r .metadata.resourceVersion "$work/beta.json")" ]
}
wait_for 30 "both versions at one resourceVersion" same_rv
[ "$(jq -r .apiVersion "$work/beta.json")" = kcr.dev/v1beta1 ] || fail "not read as v1beta1"
[ "$(jq -c .spec.service "$work/beta.json")" = '{"port":80,"portName":"web"}' ] ||
  fail "v1beta1 spec.service: $(jq -c .spec "$work/beta.json")"
[ "$(jq -c '[.spec.port, .metadata.annotations["conversion.kcr.dev/service-port-name"]]' "$work/beta.json")" = '[null,null]' ] ||
  fail "v1beta1 still has spec.port or the annotation"
[ "$(jq -c .status "$work/beta.json")" = "$(jq -c .status "$work/alpha1.json")" ] ||
  fail "status differs between the versions"
ok "v1alpha1 reads as v1beta1: spec.service $(jq -c .spec.service "$work/beta.json"), same status"
# Written back as v1beta1 (a full replace), then read as v1alpha1: nothing lost.
# (Re-read on a conflict: the operator may write status in between.)
replaced=
for _ in 1 2 3 4 5; do
  if k replace -f "$work/beta.json" >/dev/null 2>"$work/replace.err"; then
    replaced=1
    break
  fi
  sleep 1
  k -n "$ns" get apps.v1alpha1.kcr.dev web -o json >"$work/alpha1.json"
  k -n "$ns" get apps.v1beta1.kcr.dev web -o json >"$work/beta.json"
done
[ -n "$replaced" ] || fail "replace through v1beta1: $(cat "$work/replace.err")"
k -n "$ns" get apps.v1alpha1.kcr.dev web -o json >"$work/alpha2.json"
same() { jq -S "{spec, labels: .metadata.labels, annotations: .metadata.annotations, finalizers: .metadata.finalizers, uid: .metadata.uid, generation: .metadata.generation}" "$1"; }
diff <(same "$work/alpha1.json") <(same "$work/alpha2.json") >&2 ||
  fail "the round trip through v1beta1 changed the App"
ok "v1alpha1 -> v1beta1 -> written back -> v1alpha1: spec, labels, annotations, finalizers, uid equal (generation $(jq .metadata.generation "$work/alpha2.json"))"
k -n "$ns" patch apps.v1beta1.kcr.dev web --type=merge -p '{"spec":{"service":{"port":81,"portName":"http"}}}' \
  >/dev/null || fail "patch through v1beta1"
[ "$(k -n "$ns" get apps.v1alpha1.kcr.dev web -o jsonpath='{.spec.port} {.metadata.annotations.conversion\.kcr\.dev/service-port-name}')" = "81 http" ] ||
  fail "a v1beta1 change did not reach v1alpha1"
ok "spec.service changed through v1beta1 shows as v1alpha1 port 81 and the annotation"
lst() { k -n "$ns" get "apps.$1.kcr.dev" -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.uid} {.metadata.resourceVersion}{"\n"}{end}'; }
same_lists() { [ "$(lst v1beta1)" = "$(lst v1alpha1)" ]; }
wait_for 10 "the two versions to list the same objects" same_lists
[ "$(lst v1beta1 | wc -l)" -ge 3 ] || fail "too few objects listed: $(lst v1beta1)"
ok "get apps.v1beta1.kcr.dev and apps.v1alpha1.kcr.dev: the same $(lst v1beta1 | wc -l) objects"

# ---- certificate rotation ----
leaf ca1 0x2002 "$work/certs/..v2"
swap "$work/certs/..v2"
wait_for 30 "the served serial to become 2002" sh -c "[ \"\$(openssl s_client -connect 127.0.0.1:$port -servername 127.0.0.1 </dev/null 2>/dev/null | openssl x509 -noout -serial)\" = serial=2002 ]"
app rotated '{"image":"nginx:1.27"}' | k create -f - >/dev/null 2>&1 || fail "create after rotation"
k -n "$ns" get apps.v1beta1.kcr.dev rotated >/dev/null || fail "conversion after rotation"
ok "certificate replaced on disk: serial 1001 -> 2002, no restart (pid $pid), calls keep working"
# The API server keeps its connections alive, and a connection keeps the
# certificate it was made with (as Go's server does): new handshakes get the
# new certificate, so a fresh client with only the old serial's CA still
# verifies, and the API server's calls go on over old and new connections.
# ---- faults: malformed handshakes, slowloris, 1000 connections ----
# The same faults against the webhook server (reviews must be answered) and
# the secure metrics server (a scrape without a token must be answered 401).
ulimit -n 4096 2>/dev/null || true
cat >"$work/faults.py" <<'PY'
import json, os, socket, ssl, sys, time
port, ca, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
addr = ("127.0.0.1", port)

def client_ctx():
    if ca != "-":
        return ssl.create_default_context(cafile=ca)
    ctx = ssl.create_default_context()  # the metrics server's self-signed certificate
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx

def review():
    if mode == "metrics":
        return scrape()
    ctx = client_ctx()
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": "f", "operation": "CREATE", "name": "x",
                                   "namespace": "n", "object": {"spec": {"image": "x:1"}}}})
    with socket.create_connection(addr, timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            s.sendall(("POST /validate-kcr-dev-v1alpha1-app HTTP/1.1\r\nHost: x\r\n"
                       "Content-Type: application/json\r\nContent-Length: %d\r\n"
                       "Connection: close\r\n\r\n%s" % (len(body), body)).encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    assert data.startswith(b"HTTP/1.1 200"), data[:80]
    assert b'"allowed":true' in data, data[-200:]

def scrape():
    with socket.create_connection(addr, timeout=10) as raw:
        with client_ctx().wrap_socket(raw, server_hostname="127.0.0.1") as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    assert data.startswith(b"HTTP/1.1 401"), data[:80]

# Malformed handshakes: plain HTTP, random bytes, a truncated ClientHello,
# a handshake record of absurd length; each must be closed, none must hurt.
bad = [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", os.urandom(512),
       bytes.fromhex("160301020001"), bytes.fromhex("1603030000"),
       bytes.fromhex("16030340000100ffff") + os.urandom(64)]
for i in range(100):
    s = socket.create_connection(addr, timeout=10)
    s.sendall(bad[i % len(bad)])
    try:
        s.shutdown(socket.SHUT_WR)
        while s.recv(4096):
            pass
    except OSError:
        pass
    s.close()
review()
print("ok: %s: 100 malformed handshakes closed, then a request answered" % mode)

# Slowloris: 20 clients finish the handshake, then send one header byte a
# second; the server's header timeout must close them, and a review must be
# answered while they dribble.
ctx = client_ctx()
slow = []
for _ in range(20):
    s = ctx.wrap_socket(socket.create_connection(addr, timeout=10), server_hostname="127.0.0.1")
    slow.append(s)
t0 = time.monotonic()
closed = set()
review_done = False
while len(closed) < len(slow) and time.monotonic() - t0 < 30:
    for i, s in enumerate(slow):
        if i in closed:
            continue
        try:
            s.sendall(b"P")
        except OSError:
            closed.add(i)
    if not review_done and time.monotonic() - t0 > 1:
        review()
        review_done = True
    time.sleep(1)
assert len(closed) == len(slow), "%d of %d slow clients still open after 30 s" % (len(slow) - len(closed), len(slow))
print("ok: %s: 20 slowloris clients closed by the server after %.0f s, a request answered "
      "meanwhile" % (mode, time.monotonic() - t0))
for s in slow:
    s.close()

# 1000 connections at once, half of them mid-handshake (a ClientHello start),
# held open; reviews must still be answered (the server sheds idle ones).
conns = []
for i in range(1000):
    s = socket.socket()
    s.settimeout(10)
    s.connect(addr)
    if i % 2:
        s.sendall(bytes.fromhex("16030100"))
    conns.append(s)
t = time.monotonic()
for _ in range(5):
    review()
print("ok: %s: 1000 connections held, 5 requests answered in %.2f s" % (mode, time.monotonic() - t))
for s in conns:
    s.close()
PY
python3 "$work/faults.py" "$port" "$work/pki/ca1.crt" webhook || fail "the webhook server under faults"
python3 "$work/faults.py" "$mport" - metrics || fail "the metrics server under faults"
kill -0 "$pid" || fail "the operator died under the faults"
app after '{"image":"nginx:1.27"}' | k create -f - >/dev/null 2>&1 || fail "create after the faults"
ok "the operator is alive and admits Apps after the faults"

# ---- metrics and shutdown ----
grep -q 'HTTP/2 is not served' "$work/operator.log" && fail "HTTP/2 warning without --enable-http2"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "exit $rc after SIGTERM"
ok "SIGTERM -> exit 0"
