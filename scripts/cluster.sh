#!/usr/bin/env bash
# A local Kubernetes control plane for kcr's tests, demos and benchmarks:
# etcd + kube-apiserver + kube-controller-manager, all on loopback, on ports
# picked at run time, with everything (certificates, data, logs, pidfiles,
# kubeconfigs) in one directory. Several clusters can run at once, each in its
# own directory.
#
# Usage: scripts/cluster.sh up [--kwok] [DIR]
#        scripts/cluster.sh down|status|env|restart-apiserver|compact [DIR]
#        scripts/cluster.sh build [--kwok]
#   up      generate certificates (first time), start etcd, kube-apiserver and
#           kube-controller-manager, wait until they are ready, write
#           DIR/kubeconfig and print the line to export it
#   up --kwok  (or KCR_KWOK=1) also kube-scheduler and kwok with fake nodes:
#           Pods of Deployments are scheduled onto the fake nodes and kwok
#           marks them Running and Ready (no container runs, so there is no
#           Pod traffic), so Deployments become Available on their own. The
#           two binaries are built from the Go module proxy into the cache the
#           first time (tools/k8s, tools/kwok).
#   build   only build (or find in the cache) the binaries `up` runs, with
#           --kwok kube-scheduler and kwok too; starts nothing
#   down    stop the components (SIGTERM, SIGKILL after a grace period) and
#           check that no process and no port is left behind
#   status  report each component (exit 0: all running, 1: some, 3: none)
#   env     print the export line for DIR/kubeconfig
#   restart-apiserver
#           stop kube-apiserver (SIGTERM, SIGKILL after the grace period) and
#           start it again with the same flags on the same port, so clients
#           reconnect to the same address; waits for /readyz
#   compact compact etcd to its current revision (physically), record it in
#           compact_rev_key as kube-apiserver's own compactor does (the
#           apiserver's watch cache notices within ~15 s), print the revision
# DIR defaults to ${KCR_CLUSTER_DIR:-$PWD/.kcr-cluster}.
#
# Environment:
#   KCR_CACHE             binary cache root (see scripts/build-control-plane.sh)
#   KCR_READY_TIMEOUT     seconds to wait for each component (default 90)
#   KCR_DOWN_GRACE        seconds between SIGTERM and SIGKILL (default 10)
#   KCR_RESTART_GRACE     the same for restart-apiserver (default 3: with
#                         watches open, kube-apiserver stops listening at
#                         once but waits up to its --request-timeout, 60 s,
#                         for them to end)
#   KCR_APISERVER_ARGS    extra kube-apiserver flags (word-split)
#   KCR_FEATURE_GATES     kube-apiserver's --feature-gates (default
#                         ShardedListAndWatch=true: sharded list and watch,
#                         alpha, for sharded controllers); empty: none, the
#                         server's defaults (the gate off)
#   KCR_KCM_ARGS          extra kube-controller-manager flags (word-split)
#   KCR_SERVICE_CIDR      the Service IP range (default 10.0.0.0/16: room for
#                         the benchmarks' thousands of Services; 10.0.0.1,
#                         the kubernetes Service, must stay in it)
#   KCR_KWOK              1: as --kwok
#   KCR_KWOK_NODES        fake nodes with --kwok (default 2), each 32 CPUs,
#                         256 GiB and 110 Pods
#   KCR_TRACING_ENDPOINT  host:port of an OTLP/gRPC collector: kube-apiserver
#                         (--tracing-config-file) and etcd (distributed
#                         tracing) send it every span (sampling 1 in 1);
#                         unset: no tracing (see scripts/build-otelcol.sh)
#
# Layout of DIR:
#   kubeconfig            admin kubeconfig (group system:masters)
#   pki/                  CA, serving and client certificates, SA key pair
#   etcd/                 etcd data (recreated by every `up`)
#   logs/<component>.log  each component's output
#   logs/audit.log        kube-apiserver's audit log (JSON lines): every write
#                         (create, update, patch, delete, deletecollection) at
#                         Metadata level, one ResponseComplete event each, with
#                         user, userAgent, objectRef, status and timestamps;
#                         rotated at 100 MB (one backup). audit-policy.yaml is
#                         the policy.
#   run/<component>.pid   pidfiles; run/ports lists the ports in use
#   run/kube-apiserver.args  kube-apiserver's command line (NUL-separated),
#                         what restart-apiserver runs again
#   bin/kubectl           symlink to the cached kubectl
#   run/kwok              present when the cluster runs with --kwok
set -euo pipefail

prog=cluster
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
components=(etcd kube-apiserver kube-controller-manager)
ready_timeout=${KCR_READY_TIMEOUT:-90}
down_grace=${KCR_DOWN_GRACE:-10}
restart_grace=${KCR_RESTART_GRACE:-3}

die() { printf '%s: error: %s\n' "$prog" "$*" >&2; exit 1; }
say() { printf '%s: %s\n' "$prog" "$*" >&2; }

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

(($# >= 1)) || usage
cmd=$1
shift
kwok=0
[[ "${KCR_KWOK:-0}" == 1 ]] && kwok=1
if [[ ( "$cmd" == up || "$cmd" == build ) && "${1:-}" == --kwok ]]; then
    kwok=1
    shift
fi
(($# <= 1)) || usage
dir=${1:-${KCR_CLUSTER_DIR:-$PWD/.kcr-cluster}}
case "$cmd" in
    up | down | status | env | build) ;;
    restart-apiserver) cmd=restart_apiserver ;;
    compact) ;;
    *) usage ;;
esac

# Only `up` creates DIR; the other commands work on a missing one.
[[ "$cmd" == up ]] && mkdir -p "$dir"
if [[ -d "$dir" ]]; then
    dir=$(cd "$dir" && pwd)
elif [[ "$dir" != /* ]]; then
    dir=$PWD/$dir
fi
pki=$dir/pki
run=$dir/run
logs=$dir/logs
# A cluster started with --kwok keeps its two extra components for every command.
[[ "$cmd" != up && -f "$run/kwok" ]] && kwok=1
((kwok)) && components+=(kube-scheduler kwok)
kwok_nodes=${KCR_KWOK_NODES:-2}

now_ms() { date +%s%3N; }

# --- processes ---------------------------------------------------------------

pidfile() { printf '%s/%s.pid' "$run" "$1"; }

# alive PID: the process exists, is not a zombie, and is one of this cluster's
# (its command line names DIR), so a recycled pid is never signalled.
alive() {
    local pid=$1 state cmdline
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [[ -r /proc/$pid/stat ]] || return 1
    state=$(sed 's/^.*) \(.\).*$/\1/' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ "$state" != Z ]] || return 1
    cmdline=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) || return 1
    [[ "$cmdline" == *"$dir/"* ]]
}

# running PID: the process exists and is not a zombie. What wait_ready asks of
# a process it has just started: until the child has exec'd, its command line
# is still the shell's (no "$dir/" in it), which alive would take for a
# recycled pid, and a slow exec on a loaded machine then read as "exited".
running() {
    local pid=$1 state
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [[ -r /proc/$pid/stat ]] || return 1
    state=$(sed 's/^.*) \(.\).*$/\1/' "/proc/$pid/stat" 2>/dev/null) || return 1
    [[ "$state" != Z ]]
}

component_pid() { # NAME: prints the live pid of NAME, fails if not running
    local f pid
    f=$(pidfile "$1")
    [[ -f "$f" ]] || return 1
    pid=$(<"$f")
    alive "$pid" || return 1
    printf '%s\n' "$pid"
}

# stop NAME [GRACE]: SIGTERM, then SIGKILL after GRACE seconds (default
# KCR_DOWN_GRACE).
stop() {
    local name=$1 grace=${2:-$down_grace} pid f
    f=$(pidfile "$name")
    if ! pid=$(component_pid "$name"); then
        rm -f "$f"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + grace))
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
    if alive "$pid"; then
        say "$name (pid $pid) ignored SIGTERM for ${grace} s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        deadline=$((SECONDS + 10))
        while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
        alive "$pid" && die "$name (pid $pid) survived SIGKILL"
    fi
    rm -f "$f"
    say "stopped $name (pid $pid)"
}

port_in_use() { # PORT: something listens on 127.0.0.1:PORT
    local out
    out=$(ss -Htln "sport = :$1" 2>/dev/null) || return 1
    [[ -n "$out" ]]
}

stop_all() {
    local i
    for ((i = ${#components[@]} - 1; i >= 0; i--)); do stop "${components[i]}"; done
    # Every listening port recorded for this cluster must be free again.
    if [[ -f "$run/ports" ]]; then
        local name port deadline=$((SECONDS + 10)) busy
        while :; do
            busy=()
            while IFS='=' read -r name port; do
                [[ -n "$port" ]] && port_in_use "$port" && busy+=("$name:$port")
            done < "$run/ports"
            ((${#busy[@]} == 0)) && break
            ((SECONDS >= deadline)) && die "ports still in use after down: ${busy[*]}"
            sleep 0.2
        done
        rm -f "$run/ports"
    fi
}

# --- ports -------------------------------------------------------------------

# free_ports N: N distinct free loopback TCP ports, chosen by the kernel (bind
# to port 0). All sockets are held open together so the N ports differ; a port
# can still be taken by someone else before the component binds it, which
# start_component detects ("address already in use") and retries.
free_ports() {
    python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# pick_ports N: sets the array `ports` to N free ports, or dies.
pick_ports() {
    local out p
    out=$(free_ports "$1") || die "could not pick free ports (python3 failed)"
    read -r -a ports <<< "$out"
    ((${#ports[@]} == $1)) || die "could not pick $1 free ports (got '$out')"
    for p in "${ports[@]}"; do [[ "$p" =~ ^[0-9]+$ ]] || die "bad port '$p'"; done
}

# --- certificates ------------------------------------------------------------

# sign NAME SUBJECT EXTENSIONS: key + certificate signed by the cluster CA.
sign() {
    local name=$1 subj=$2 ext=$3
    openssl ecparam -name prime256v1 -genkey -noout -out "$pki/$name.key" 2>/dev/null
    openssl req -new -key "$pki/$name.key" -subj "$subj" -out "$pki/$name.csr" 2>/dev/null
    printf '%s\n' "$ext" > "$pki/$name.ext"
    openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
        -CAcreateserial -days 3650 -sha256 -extfile "$pki/$name.ext" \
        -out "$pki/$name.crt" 2>/dev/null
    rm -f "$pki/$name.csr" "$pki/$name.ext"
}

gen_pki() {
    [[ -f "$pki/.complete" ]] && return 0
    command -v openssl >/dev/null || die "openssl is needed to generate certificates"
    rm -rf "$pki"
    mkdir -p "$pki"
    chmod 700 "$pki"
    say "generating certificates in $pki"
    openssl ecparam -name prime256v1 -genkey -noout -out "$pki/ca.key" 2>/dev/null
    openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=kcr-ca" -days 3650 -sha256 \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
        -out "$pki/ca.crt" 2>/dev/null
    local client_ext="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
    sign apiserver "/CN=kube-apiserver" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.0.0.1"
    sign admin "/O=system:masters/CN=kcr-admin" "$client_ext"
    sign kube-controller-manager "/CN=system:kube-controller-manager" "$client_ext"
    # Service-account token signing key pair.
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/sa.key" 2>/dev/null
    openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
    touch "$pki/.complete"
}

# gen_scheduler_cert: kube-scheduler's client certificate (added to a pki/ made
# before --kwok existed, from the same CA).
gen_scheduler_cert() {
    [[ -f "$pki/kube-scheduler.crt" ]] && return 0
    sign kube-scheduler "/CN=system:kube-scheduler" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
}

# --- kubeconfigs -------------------------------------------------------------

b64() { base64 -w0 < "$1"; }

# write_kubeconfig FILE USER CERT KEY PORT
write_kubeconfig() {
    local file=$1 user=$2 cert=$3 key=$4 port=$5
    local tmp=$file.tmp.$$
    (
        umask 077
        cat > "$tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kcr
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority-data: $(b64 "$pki/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(b64 "$cert")
    client-key-data: $(b64 "$key")
contexts:
- name: kcr
  context:
    cluster: kcr
    user: $user
current-context: kcr
EOF
    )
    mv "$tmp" "$file"
}

# --- start -------------------------------------------------------------------

# keep_on_fail: set by restart-apiserver, whose failure must not take down
# the components it did not touch.
keep_on_fail=0

fail_component() { # NAME WHY: report, tear down what was started, exit 1
    local name=$1 why=$2
    printf '%s: error: %s failed to start: %s\n' "$prog" "$name" "$why" >&2
    printf '%s: last 40 lines of %s:\n' "$prog" "$logs/$name.log" >&2
    tail -n 40 "$logs/$name.log" >&2 || true
    ((keep_on_fail)) || stop_all >/dev/null 2>&1 || true
    exit 1
}

# launch NAME BINARY ARGS...: start a component in its own session, detached
# from the caller's stdio (so a test runner waiting on its pipes is not held).
launch() {
    local name=$1
    shift
    printf '=== %s starting at %s: %s\n' "$name" "$(date -u +%FT%TZ)" "$*" >> "$logs/$name.log"
    setsid "$@" < /dev/null >> "$logs/$name.log" 2>&1 &
    printf '%s\n' "$!" > "$(pidfile "$name")"
}

# wait_ready NAME PROBE...: poll PROBE until it succeeds; fail if the process
# exits or the timeout passes. Returns 2 if the log shows a port clash.
wait_ready() {
    local name=$1 pid deadline=$((SECONDS + ready_timeout))
    shift
    pid=$(<"$(pidfile "$name")")
    while :; do
        "$@" && return 0
        if ! running "$pid"; then
            local tail_out
            tail_out=$(tail -n 40 "$logs/$name.log" 2>/dev/null || true)
            [[ "${tail_out,,}" == *"address already in use"* ]] && return 2
            fail_component "$name" "process exited"
        fi
        ((SECONDS < deadline)) || fail_component "$name" "not ready after ${ready_timeout} s"
        sleep 0.1
    done
}

probe_http() { curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; }

probe_apiserver() { # PATH
    curl -fsS -o /dev/null --max-time 2 --cacert "$pki/ca.crt" \
        --cert "$pki/admin.crt" --key "$pki/admin.key" \
        "https://127.0.0.1:$apiserver_port$1" 2>/dev/null
}

probe_apiserver_ready() {
    probe_apiserver /readyz && probe_apiserver /api/v1/namespaces/default
}

probe_kcm() { curl -fsSk -o /dev/null --max-time 2 "https://127.0.0.1:$kcm_port/healthz" 2>/dev/null; }

# tracing_flags COMPONENT: the flags that make COMPONENT trace to
# $KCR_TRACING_ENDPOINT, into the array tflags (empty when it is unset).
tracing_flags() {
    tflags=()
    [[ -n "${KCR_TRACING_ENDPOINT:-}" ]] || return 0
    case "$1" in
        etcd) tflags=(--enable-distributed-tracing
            --distributed-tracing-address="$KCR_TRACING_ENDPOINT"
            --distributed-tracing-sampling-rate=1000000) ;;
        kube-apiserver)
            printf '%s\n' 'apiVersion: apiserver.config.k8s.io/v1' 'kind: TracingConfiguration' \
                "endpoint: $KCR_TRACING_ENDPOINT" 'samplingRatePerMillion: 1000000' \
                > "$dir/tracing-config.yaml"
            tflags=(--tracing-config-file="$dir/tracing-config.yaml") ;;
    esac
}

start_etcd() {
    local ports tflags
    tracing_flags etcd
    pick_ports 2
    etcd_client_port=${ports[0]}
    etcd_peer_port=${ports[1]}
    rm -rf "$dir/etcd"
    launch etcd "$bin_etcd" \
        --name=kcr \
        --data-dir="$dir/etcd" \
        --listen-client-urls="http://127.0.0.1:$etcd_client_port" \
        --advertise-client-urls="http://127.0.0.1:$etcd_client_port" \
        --listen-peer-urls="http://127.0.0.1:$etcd_peer_port" \
        --initial-advertise-peer-urls="http://127.0.0.1:$etcd_peer_port" \
        --initial-cluster="kcr=http://127.0.0.1:$etcd_peer_port" \
        --initial-cluster-state=new \
        --unsafe-no-fsync \
        --log-level=warn \
        "${tflags[@]}"
    wait_ready etcd probe_http "http://127.0.0.1:$etcd_client_port/health"
}

# write_audit_policy: writes at Metadata level, nothing else (reads and
# watches would dwarf them). Cheap enough to be always on: the tests use it
# to see whose writes landed when (test_leader_fence_it).
write_audit_policy() {
    cat > "$dir/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
EOF
}

start_apiserver() {
    local ports tflags
    tracing_flags kube-apiserver
    pick_ports 1
    apiserver_port=${ports[0]}
    local extra=()
    # shellcheck disable=SC2206 # word splitting of the extra flags is wanted
    [[ -n "${KCR_APISERVER_ARGS:-}" ]] && extra=($KCR_APISERVER_ARGS)
    local gates=${KCR_FEATURE_GATES-ShardedListAndWatch=true}
    [[ -n "$gates" ]] && extra=(--feature-gates="$gates" "${extra[@]}")
    local argv=("$bin_apiserver" \
        --advertise-address=127.0.0.1 \
        --bind-address=127.0.0.1 \
        --secure-port="$apiserver_port" \
        --etcd-servers="http://127.0.0.1:$etcd_client_port" \
        --cert-dir="$dir/apiserver" \
        --tls-cert-file="$pki/apiserver.crt" \
        --tls-private-key-file="$pki/apiserver.key" \
        --client-ca-file="$pki/ca.crt" \
        --authorization-mode=RBAC \
        --service-account-issuer="https://kubernetes.default.svc.cluster.local" \
        --service-account-key-file="$pki/sa.pub" \
        --service-account-signing-key-file="$pki/sa.key" \
        --service-cluster-ip-range="${KCR_SERVICE_CIDR:-10.0.0.0/16}" \
        --disable-admission-plugins=ServiceAccount \
        --endpoint-reconciler-type=none \
        --allow-privileged=true \
        --profiling=false \
        --audit-policy-file="$dir/audit-policy.yaml" \
        --audit-log-path="$logs/audit.log" \
        --audit-log-format=json \
        --audit-log-maxsize=100 \
        --audit-log-maxbackup=1 \
        "${tflags[@]}" "${extra[@]}")
    # Kept so that restart-apiserver runs exactly this command line again.
    printf '%s\0' "${argv[@]}" > "$run/kube-apiserver.args"
    launch kube-apiserver "${argv[@]}"
    wait_ready kube-apiserver probe_apiserver_ready
}

start_kcm() {
    local ports
    local kcm_controllers=garbage-collector-controller,namespace-controller,deployment-controller,replicaset-controller,serviceaccount-controller,serviceaccount-token-controller
    # With fake nodes: the node lifecycle controller lifts the not-ready taint
    # the API server puts on a new Node once kwok reports it Ready (and taints
    # it again if kwok stops heartbeating), as on a real cluster.
    ((kwok)) && kcm_controllers+=,node-lifecycle-controller
    pick_ports 1
    kcm_port=${ports[0]}
    local extra=()
    # shellcheck disable=SC2206 # word splitting of the extra flags is wanted
    [[ -n "${KCR_KCM_ARGS:-}" ]] && extra=($KCR_KCM_ARGS)
    launch kube-controller-manager "$bin_kcm" \
        --kubeconfig="$dir/kube-controller-manager.kubeconfig" \
        --authentication-kubeconfig="$dir/kube-controller-manager.kubeconfig" \
        --authorization-kubeconfig="$dir/kube-controller-manager.kubeconfig" \
        --bind-address=127.0.0.1 \
        --secure-port="$kcm_port" \
        --cert-dir="$dir/kube-controller-manager" \
        --leader-elect=false \
        --controllers="$kcm_controllers" \
        --service-account-private-key-file="$pki/sa.key" \
        --root-ca-file="$pki/ca.crt" \
        --use-service-account-credentials=true \
        --profiling=false \
        "${extra[@]}"
    wait_ready kube-controller-manager probe_kcm
}

probe_scheduler() {
    curl -fsSk -o /dev/null --max-time 2 "https://127.0.0.1:$scheduler_port/healthz" 2>/dev/null
}

start_scheduler() {
    local ports
    pick_ports 1
    scheduler_port=${ports[0]}
    launch kube-scheduler "$bin_scheduler" \
        --kubeconfig="$dir/kube-scheduler.kubeconfig" \
        --authentication-kubeconfig="$dir/kube-scheduler.kubeconfig" \
        --authorization-kubeconfig="$dir/kube-scheduler.kubeconfig" \
        --bind-address=127.0.0.1 \
        --secure-port="$scheduler_port" \
        --cert-dir="$dir/kube-scheduler" \
        --leader-elect=false \
        --profiling=false
    wait_ready kube-scheduler probe_scheduler
}

probe_kwok() { probe_http "http://127.0.0.1:$kwok_port/healthz"; }

# start_kwok: kwok manages the nodes annotated kwok.x-k8s.io/node=fake (and
# their Pods) with its built-in stages: nodes become Ready, bound Pods Running
# and Ready.
start_kwok() {
    local ports
    pick_ports 1
    kwok_port=${ports[0]}
    launch kwok "$bin_kwok" \
        --kubeconfig="$dir/kwok.kubeconfig" \
        --config="$dir/kwok.yaml" \
        --manage-all-nodes=false \
        --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
        --server-address="127.0.0.1:$kwok_port" \
        --cidr=10.244.0.0/16 \
        --node-ip=127.0.0.1
    wait_ready kwok probe_kwok
}

# add_fake_nodes: KCR_KWOK_NODES nodes for kwok (no taint: ordinary Pods land).
add_fake_nodes() {
    local i nodes=""
    for ((i = 0; i < kwok_nodes; i++)); do
        nodes+="---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: \"0\"
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
status:
  allocatable: {cpu: \"32\", memory: 256Gi, pods: \"110\"}
  capacity: {cpu: \"32\", memory: 256Gi, pods: \"110\"}
"
    done
    printf '%s' "$nodes" | "$bin_kubectl" --kubeconfig="$dir/kubeconfig" \
        --cache-dir="$dir/.kube-cache" apply -f - >/dev/null ||
        die "could not create the fake nodes"
    "$bin_kubectl" --kubeconfig="$dir/kubeconfig" --cache-dir="$dir/.kube-cache" \
        wait --for=condition=Ready node -l type=kwok --timeout="${ready_timeout}s" >/dev/null ||
        die "the fake nodes did not become Ready (see $logs/kwok.log)"
}

# build_kwok_binaries: kube-scheduler (from tools/k8s, the module the other
# Kubernetes binaries come from) and kwok (tools/kwok), built once into the
# cache like build-control-plane.sh's: CACHE/kube-scheduler/<k8s version>/bin
# and CACHE/kwok/<kwok version>/bin, each with a stamp of its module.
build_kwok_binaries() {
    local cache_root=${KCR_CACHE:-${HOME:?HOME is not set}/.cache/kcr}
    local k8s_v kwok_v
    command -v go >/dev/null || die "go is not in PATH (needed once, to build kube-scheduler and kwok)"
    k8s_v=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ { print $2; exit }' "$repo_root/tools/k8s/go.mod")
    kwok_v=$(awk '$1 == "sigs.k8s.io/kwok" && $2 ~ /^v/ { print $2; exit }' "$repo_root/tools/kwok/go.mod")
    [[ -n "$k8s_v" && -n "$kwok_v" ]] || die "no k8s.io/kubernetes or sigs.k8s.io/kwok version in tools/"
    bin_scheduler=$cache_root/kube-scheduler/$k8s_v/bin/kube-scheduler
    bin_kwok=$cache_root/kwok/$kwok_v/bin/kwok
    mkdir -p "$cache_root"
    (
        exec 9>"$cache_root/.build.lock"
        flock 9
        go_tool "$repo_root/tools/k8s" k8s.io/kubernetes/cmd/kube-scheduler "$bin_scheduler" \
            "-s -w -X k8s.io/component-base/version.gitVersion=$k8s_v"
        go_tool "$repo_root/tools/kwok" sigs.k8s.io/kwok/cmd/kwok "$bin_kwok" \
            "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$kwok_v"
        # kwok's own stages (the module's kustomize/stage): nodes initialised and
        # kept alive by heartbeats, Pods made Ready, completed and deleted.
        if [[ ! -s "${bin_kwok%/bin/kwok}/stages.yaml" ]]; then
            local mod f
            mod=$(cd "$repo_root/tools/kwok" && GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod" \
                go list -m -f '{{.Dir}}' sigs.k8s.io/kwok) || die "cannot locate the kwok module"
            for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml \
                pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
                [[ -f "$mod/kustomize/stage/$f" ]] || die "kwok module lacks kustomize/stage/$f"
                printf -- '---\n'
                cat "$mod/kustomize/stage/$f"
            done > "${bin_kwok%/bin/kwok}/stages.yaml.tmp"
            mv -f "${bin_kwok%/bin/kwok}/stages.yaml.tmp" "${bin_kwok%/bin/kwok}/stages.yaml"
        fi
    ) || exit 1
    kwok_stages=${bin_kwok%/bin/kwok}/stages.yaml
}

# go_tool MODULE_DIR PKG OUT LDFLAGS: go build PKG into OUT unless OUT is there
# and its stamp (Go version, go.mod, go.sum) is current.
go_tool() {
    local src=$1 pkg=$2 out=$3 ldflags=$4 stamp
    stamp=$({ go env GOVERSION; cat "$src/go.mod" "$src/go.sum"; } | sha256sum | cut -d' ' -f1)
    [[ -x "$out" && -f "$out.stamp" && "$(<"$out.stamp")" == "$stamp" ]] && return 0
    say "building ${out##*/} from the Go module proxy (first time only; a few minutes)"
    mkdir -p "${out%/*}"
    (cd "$src" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod" \
        go build -trimpath -ldflags "$ldflags" -o "$out.tmp" "$pkg") ||
        die "go build $pkg failed"
    mv -f "$out.tmp" "$out"
    printf '%s\n' "$stamp" > "$out.stamp"
}

# with_retry FN: run a start function again (new ports) after a port clash.
with_retry() {
    local attempt rc
    for attempt in 1 2 3; do
        rc=0
        "$1" || rc=$?
        ((rc == 0)) && return 0
        ((rc == 2)) || exit "$rc"
        say "${1#start_}: port taken before it could bind (attempt $attempt); retrying"
    done
    die "${1#start_}: could not get a free port after 3 attempts"
}

find_binaries() {
    local line name path out
    out=$("$repo_root/scripts/build-control-plane.sh" --quiet) ||
        die "could not build or find the control-plane binaries (run scripts/build-control-plane.sh)"
    while IFS='=' read -r name path; do
        case "$name" in
            etcd) bin_etcd=$path ;;
            kube-apiserver) bin_apiserver=$path ;;
            kube-controller-manager) bin_kcm=$path ;;
            kubectl) bin_kubectl=$path ;;
        esac
    done <<< "$out"
    for line in "$bin_etcd" "$bin_apiserver" "$bin_kcm" "$bin_kubectl"; do
        [[ -x "$line" ]] || die "missing binary $line"
    done
}

cmd_up() {
    local running=0 c
    for c in "${components[@]}"; do component_pid "$c" >/dev/null && running=$((running + 1)); done
    if ((running == ${#components[@]})); then
        say "already up in $dir"
        cmd_env
        return 0
    fi
    ((running == 0)) || die "cluster in $dir is partly running; run: $0 down $dir"
    for c in curl python3 ss setsid; do
        command -v "$c" >/dev/null || die "$c is needed"
    done

    find_binaries
    ((kwok)) && build_kwok_binaries
    local t0
    t0=$(now_ms)
    mkdir -p "$run" "$logs" "$dir/bin"
    ln -sfn "$bin_kubectl" "$dir/bin/kubectl"
    gen_pki
    # Logs are per run: keep the previous one for post-mortems.
    for c in "${components[@]}" audit; do
        [[ -f "$logs/$c.log" ]] && mv -f "$logs/$c.log" "$logs/$c.log.prev"
    done
    rm -f "$logs"/audit-*.log
    write_audit_policy
    : > "$run/ports"

    with_retry start_etcd
    printf 'etcd=%s\netcd-peer=%s\n' "$etcd_client_port" "$etcd_peer_port" >> "$run/ports"
    say "etcd ready on 127.0.0.1:$etcd_client_port"

    with_retry start_apiserver
    printf 'kube-apiserver=%s\n' "$apiserver_port" >> "$run/ports"
    say "kube-apiserver ready on https://127.0.0.1:$apiserver_port"

    write_kubeconfig "$dir/kube-controller-manager.kubeconfig" system:kube-controller-manager \
        "$pki/kube-controller-manager.crt" "$pki/kube-controller-manager.key" "$apiserver_port"
    with_retry start_kcm
    printf 'kube-controller-manager=%s\n' "$kcm_port" >> "$run/ports"
    say "kube-controller-manager ready (healthz on 127.0.0.1:$kcm_port)"

    write_kubeconfig "$dir/kubeconfig" kcr-admin "$pki/admin.crt" "$pki/admin.key" "$apiserver_port"
    if ((kwok)); then
        gen_scheduler_cert
        write_kubeconfig "$dir/kube-scheduler.kubeconfig" system:kube-scheduler \
            "$pki/kube-scheduler.crt" "$pki/kube-scheduler.key" "$apiserver_port"
        with_retry start_scheduler
        printf 'kube-scheduler=%s\n' "$scheduler_port" >> "$run/ports"
        say "kube-scheduler ready (healthz on 127.0.0.1:$scheduler_port)"
        write_kubeconfig "$dir/kwok.kubeconfig" kcr-admin "$pki/admin.crt" "$pki/admin.key" \
            "$apiserver_port"
        {
            # The options' documented defaults: kwok applies them only to a
            # configuration it generates, not to one given with --config.
            printf '%s\n' 'apiVersion: config.kwok.x-k8s.io/v1alpha1' 'kind: KwokConfiguration' \
                'options:' '  podPlayStageParallelism: 4' '  nodePlayStageParallelism: 4' \
                '  nodeLeaseDurationSeconds: 40' '  nodeLeaseParallelism: 4' \
                '  podsOnNodeSyncParallelism: 1' '  enableCNI: false'
            cat "$kwok_stages"
        } > "$dir/kwok.yaml"
        with_retry start_kwok
        printf 'kwok=%s\n' "$kwok_port" >> "$run/ports"
        add_fake_nodes
        : > "$run/kwok"
        say "kwok ready with $kwok_nodes fake nodes (healthz on 127.0.0.1:$kwok_port)"
    else
        rm -f "$run/kwok"
    fi
    local ms=$(($(now_ms) - t0))
    say "up in $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s: $dir"
    cmd_env
}

cmd_down() {
    stop_all
    say "down: $dir"
}

cmd_status() {
    local c pid up=0 port=""
    for c in "${components[@]}"; do
        if pid=$(component_pid "$c"); then
            up=$((up + 1))
            port=$(sed -n "s/^$c=//p" "$run/ports" 2>/dev/null | head -n1)
            printf '%-24s running  pid %-8s%s\n' "$c" "$pid" "${port:+ port $port}"
        else
            printf '%-24s stopped\n' "$c"
        fi
    done
    if ((up == ${#components[@]})); then
        apiserver_port=$(sed -n 's/^kube-apiserver=//p' "$run/ports")
        if probe_apiserver /readyz; then
            printf '%-24s ok\n' "readyz"
        else
            printf '%-24s failing\n' "readyz"
            return 1
        fi
        return 0
    fi
    ((up == 0)) && return 3
    return 1
}

# port_of NAME: the port recorded for NAME in run/ports, or die.
port_of() {
    local port
    port=$(sed -n "s/^$1=//p" "$run/ports" 2>/dev/null | head -n1)
    [[ "$port" =~ ^[0-9]+$ ]] || die "no $1 port in $run/ports (is the cluster in $dir up?)"
    printf '%s\n' "$port"
}

cmd_restart_apiserver() {
    local args=$run/kube-apiserver.args argv=() t0 rc attempt
    component_pid kube-apiserver >/dev/null || die "kube-apiserver is not running in $dir"
    [[ -s "$args" ]] || die "no $args (cluster started by an older cluster.sh?); run down and up"
    mapfile -d '' -t argv < "$args"
    apiserver_port=$(port_of kube-apiserver)
    keep_on_fail=1
    t0=$(now_ms)
    stop kube-apiserver "$restart_grace"
    # The same port, so clients reconnect to the same address. Go listens
    # with SO_REUSEADDR, so connections in TIME_WAIT do not block it; a
    # socket still closing may, briefly, hence the retries.
    for attempt in 1 2 3 4 5; do
        launch kube-apiserver "${argv[@]}"
        rc=0
        wait_ready kube-apiserver probe_apiserver_ready || rc=$?
        ((rc == 0)) && break
        say "kube-apiserver: port $apiserver_port busy (attempt $attempt); retrying"
        sleep 1
    done
    ((rc == 0)) || fail_component kube-apiserver "port $apiserver_port stayed in use"
    local ms=$(($(now_ms) - t0))
    say "kube-apiserver restarted in $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s on https://127.0.0.1:$apiserver_port"
}

# etcd_post PATH JSON: POST to etcd's JSON gateway; the body on stdout. The
# HTTP status is checked by the caller (etcd answers errors as JSON).
etcd_post() {
    curl -sS --max-time 10 -X POST -H 'Content-Type: application/json' \
        -w '\n%{http_code}' -d "$2" "http://127.0.0.1:$etcd_port$1"
}

cmd_compact() {
    local out code body rev
    component_pid etcd >/dev/null || die "etcd is not running in $dir"
    etcd_port=$(port_of etcd)
    # A range over the key "\0" (base64 AA==) matches nothing but carries the
    # store's current revision in its header.
    out=$(etcd_post /v3/kv/range '{"key":"AA=="}') || die "etcd range request failed"
    code=${out##*$'\n'}
    body=${out%$'\n'*}
    [[ "$code" == 200 ]] || die "etcd range: HTTP $code: $body"
    rev=$(grep -o '"revision":"[0-9]*"' <<< "$body" | head -n1 | tr -dc 0-9) || true
    [[ -n "$rev" ]] || die "etcd range: no revision in $body"
    out=$(etcd_post /v3/kv/compaction "{\"revision\":\"$rev\",\"physical\":true}") ||
        die "etcd compaction request failed"
    code=${out##*$'\n'}
    body=${out%$'\n'*}
    if [[ "$code" != 200 ]]; then
        # Already compacted to this revision (kube-apiserver compacts too):
        # the store is as compact as asked.
        [[ "$body" == *"required revision has been compacted"* ]] ||
            die "etcd compaction to $rev: HTTP $code: $body"
    fi
    # Tell kube-apiserver, the way its own compactor does: it watches
    # compact_rev_key (base64 Y29tcGFjdF9yZXZfa2V5) and drops its watch-cache
    # snapshots below that revision (polled every 15 s), after which reads at
    # older resource versions go to etcd and get 410 Expired. Without this the
    # cache would keep serving them.
    out=$(etcd_post /v3/kv/put \
        "{\"key\":\"Y29tcGFjdF9yZXZfa2V5\",\"value\":\"$(printf '%s' "$rev" | base64 -w0)\"}") ||
        die "etcd put compact_rev_key failed"
    code=${out##*$'\n'}
    [[ "$code" == 200 ]] || die "etcd put compact_rev_key: HTTP $code: ${out%$'\n'*}"
    say "etcd compacted to revision $rev"
    printf '%s\n' "$rev"
}

cmd_build() {
    find_binaries
    ((kwok)) && build_kwok_binaries
    say "binaries ready: $bin_apiserver${bin_kwok:+, $bin_kwok}"
}

cmd_env() {
    [[ -f "$dir/kubeconfig" ]] || die "no kubeconfig in $dir (run: $0 up $dir)"
    printf 'export KUBECONFIG=%q\n' "$dir/kubeconfig"
}

"cmd_$cmd"
