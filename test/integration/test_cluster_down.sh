#!/usr/bin/env bash
# Integration test of scripts/cluster.sh's lifecycle:
#  1. up, then down: no process of the cluster is left and its ports are free;
#  2. a component that fails to start (kube-apiserver given a bogus flag) is
#     named, `up` exits non-zero, and what had started is stopped again.
# Each case uses a fresh temporary directory. Needs the control-plane binaries
# (scripts/build-control-plane.sh; the CTest fixture builds them first).
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cluster=$repo_root/scripts/cluster.sh
passed=0
failed=0
dirs=()

cleanup() {
    local d
    for d in "${dirs[@]}"; do
        "$cluster" down "$d" >/dev/null 2>&1 || true
        rm -rf "$d"
    done
}
trap cleanup EXIT

# new_dir: sets $dir to a fresh temporary directory, removed on exit.
new_dir() {
    dir=$(mktemp -d "${TMPDIR:-/tmp}/kcr-down-test-XXXXXX")
    dirs+=("$dir")
}

check() { # DESCRIPTION COMMAND...
    local what=$1
    shift
    if "$@"; then
        echo "ok: $what"
        passed=$((passed + 1))
    else
        echo "FAIL: $what"
        failed=$((failed + 1))
    fi
}

# pid_dead PID: gone, or a zombie (holds no port, runs nothing).
pid_dead() {
    [[ -r /proc/$1/stat ]] || return 0
    local state
    state=$(sed 's/^.*) \(.\).*$/\1/' "/proc/$1/stat" 2>/dev/null) || return 0
    [[ "$state" == Z ]]
}

# procs_of DIR: pids of live processes whose command line mentions DIR.
procs_of() {
    local p cmdline
    for p in /proc/[0-9]*; do
        [[ "${p#/proc/}" == "$$" ]] && continue
        cmdline=$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null) || continue
        if [[ "$cmdline" == *"$1/"* ]] && ! pid_dead "${p#/proc/}"; then
            printf '%s %s\n' "${p#/proc/}" "$cmdline"
        fi
    done
}

no_procs_of() {
    local left
    left=$(procs_of "$1")
    [[ -z "$left" ]] || { printf 'left behind:\n%s\n' "$left" >&2; return 1; }
}

port_free() {
    local out
    out=$(ss -Htln "sport = :$1")
    [[ -z "$out" ]]
}

status_is() { # DIR EXPECTED_EXIT
    local rc=0
    "$cluster" status "$1" >/dev/null || rc=$?
    [[ "$rc" == "$2" ]] || { echo "status exited $rc, expected $2" >&2; return 1; }
}

# --- 1. up, down, nothing left ---------------------------------------------
new_dir
start=$(date +%s%3N)
check "up succeeds" "$cluster" up "$dir"
echo "up took $(($(date +%s%3N) - start)) ms"
check "status reports running" status_is "$dir" 0
kubectl_readyz() { "$dir/bin/kubectl" --kubeconfig "$dir/kubeconfig" get --raw /readyz >/dev/null; }
check "kubeconfig works" kubectl_readyz
pids=()
for f in "$dir"/run/*.pid; do pids+=("$(<"$f")"); done
ports=()
while IFS='=' read -r _ port; do ports+=("$port"); done < "$dir/run/ports"
check "three pidfiles" test "${#pids[@]}" -eq 3
check "four ports recorded" test "${#ports[@]}" -eq 4
for port in "${ports[@]}"; do check "port $port in use while up" bash -c "ss -Htln 'sport = :$port' | grep -q ."; done
check "down succeeds" "$cluster" down "$dir"
for pid in "${pids[@]}"; do check "pid $pid gone" pid_dead "$pid"; done
for port in "${ports[@]}"; do check "port $port free" port_free "$port"; done
check "no process mentions $dir" no_procs_of "$dir"
check "no pidfiles left" bash -c "! compgen -G '$dir/run/*.pid' >/dev/null"
check "status reports stopped" status_is "$dir" 3
check "down is idempotent" "$cluster" down "$dir"

# --- 2. a failing component is named, nothing is left ----------------------
new_dir
rc=0
KCR_APISERVER_ARGS=--no-such-flag "$cluster" up "$dir" > "$dir.out" 2>&1 || rc=$?
cat "$dir.out"
check "up with a broken kube-apiserver fails" test "$rc" -ne 0
check "the failing component is named" grep -q 'kube-apiserver failed to start' "$dir.out"
check "its log tail is shown" grep -q 'no-such-flag' "$dir.out"
check "etcd was stopped again" no_procs_of "$dir"
rm -f "$dir.out"

echo "$passed passed, $failed failed"
((failed == 0))
