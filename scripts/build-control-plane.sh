#!/usr/bin/env bash
# Build the local control plane (etcd, kube-apiserver, kube-controller-manager,
# kubectl) from the Go tools modules in tools/k8s and tools/etcd, into a cache
# outside the repository:
#
#   ${KCR_CACHE:-$HOME/.cache/kcr}/k8s/<version>/bin/{kube-apiserver,kube-controller-manager,kubectl}
#   ${KCR_CACHE:-$HOME/.cache/kcr}/etcd/<version>/bin/etcd
#
# A build is reused while its version and its tools module (go.mod + go.sum)
# are unchanged, so a warm run only checks a stamp file and prints the paths.
# A cold build takes a long time on two cores; it shows progress (go build -v).
#
# Usage: scripts/build-control-plane.sh [--quiet] [--force]
#   --quiet  print only the binary paths (NAME=PATH lines), no progress
#   --force  rebuild even if the cache looks current
# Environment:
#   KCR_CACHE   cache root (default $HOME/.cache/kcr)
#   GOFLAGS     passed through; -mod=mod is added so a missing go.sum line is
#               fetched rather than failing (go.sum is committed anyway)
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache_root=${KCR_CACHE:-${HOME:?HOME is not set}/.cache/kcr}

quiet=0
force=0
for arg in "$@"; do
    case "$arg" in
        --quiet) quiet=1 ;;
        --force) force=1 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) printf 'build-control-plane: unknown argument: %s\n' "$arg" >&2; exit 2 ;;
    esac
done

die() { printf 'build-control-plane: error: %s\n' "$*" >&2; exit 1; }
say() { ((quiet)) || printf 'build-control-plane: %s\n' "$*" >&2; }
# note: progress that --quiet keeps (a cold build or a lock wait takes minutes:
# say why nothing else happens), on stderr, stdout keeps NAME=PATH only.
note() { printf 'build-control-plane: %s\n' "$*" >&2; }

command -v go >/dev/null || die "go is not in PATH (Go >= 1.26 is needed)"

# module_version DIR MODULE: the version of MODULE required by DIR/go.mod.
module_version() {
    awk -v m="$2" '($1 == m || ($1 == "require" && $2 == m)) {
        v = ($1 == m) ? $2 : $3; if (v ~ /^v/) { print v; exit } }' "$1/go.mod"
}

# stamp DIR: identifies a build of the tools module in DIR.
stamp() {
    { go env GOVERSION; cat "$1/go.mod" "$1/go.sum"; } | sha256sum | cut -d' ' -f1
}

k8s_dir=$repo_root/tools/k8s
etcd_dir=$repo_root/tools/etcd
k8s_version=$(module_version "$k8s_dir" k8s.io/kubernetes)
etcd_version=$(module_version "$etcd_dir" go.etcd.io/etcd/server/v3)
[[ -n "$k8s_version" ]] || die "no k8s.io/kubernetes version in $k8s_dir/go.mod"
[[ -n "$etcd_version" ]] || die "no go.etcd.io/etcd/server/v3 version in $etcd_dir/go.mod"

k8s_out=$cache_root/k8s/$k8s_version
etcd_out=$cache_root/etcd/$etcd_version

export CGO_ENABLED=0
case " ${GOFLAGS:-} " in
    *" -mod="*) ;;
    *) export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod" ;;
esac

# Release time of a module version, as the proxy reports it (for buildDate).
release_time() {
    local info
    info=$(cd "$1" && go mod download -json "$2@$3" 2>/dev/null) || return 0
    printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Time": "\(.*\)",\{0,1\}$/\1/p' | head -n1
}

need_build() { # OUT_DIR SRC_DIR BIN...: succeeds if OUT_DIR is not current
    local out=$1 src=$2 b
    shift 2
    ((force)) && return 0
    [[ -f "$out/bin/.stamp" && "$(cat "$out/bin/.stamp")" == "$(stamp "$src")" ]] || return 0
    for b in "$@"; do [[ -x "$out/bin/$b" ]] || return 0; done
    return 1
}

# build_tools NAME SRC_DIR OUT_DIR LDFLAGS PKG:BIN...
build_tools() {
    local name=$1 src=$2 out=$3 ldflags=$4
    shift 4
    local spec bins=()
    for spec in "$@"; do bins+=("${spec#*:}"); done
    if ! need_build "$out" "$src" "${bins[@]}"; then
        say "$name: cached in $out/bin"
        return 0
    fi
    mkdir -p "$out"
    local tmp=$out/bin.tmp.$$
    rm -rf "$tmp"
    mkdir -p "$tmp"
    local verbose=(-v)
    ((quiet)) && verbose=()
    local start=$SECONDS
    # One go build for all packages: they share most of their dependencies
    # and the linker runs in parallel. With several packages, -o DIR/ names
    # each binary after its package's last path element.
    local pkgs=() target=$tmp/
    for spec in "$@"; do pkgs+=("${spec%%:*}"); done
    (($# == 1)) && target=$tmp/${bins[0]}
    say "$name: building ${bins[*]} (-v lists packages as they compile)"
    ((announced)) || note "building the control plane (cold build, this takes about 9 minutes on 2 cores)…"
    announced=1
    if ! (cd "$src" && go build "${verbose[@]}" -trimpath -ldflags "$ldflags" -o "$target" "${pkgs[@]}"); then
        rm -rf "$tmp"
        die "$name: go build failed (see the output above)"
    fi
    local bin
    for bin in "${bins[@]}"; do
        [[ -x "$tmp/$bin" ]] || { rm -rf "$tmp"; die "$name: go build did not produce $bin"; }
    done
    stamp "$src" > "$tmp/.stamp"
    rm -rf "${out:?}/bin"
    mv "$tmp" "$out/bin"
    say "$name: built in $((SECONDS - start)) s into $out/bin"
}

# Serialize concurrent builds against the same cache.
mkdir -p "$cache_root"
# The holder writes its pid beside the lock, so a waiter can say whom it waits for.
lock=$cache_root/.build.lock
exec 9>"$lock"
if ! flock -n 9; then
    holder=$(cat "$lock.pid" 2>/dev/null || echo unknown)
    note "waiting for another build's lock on $lock (held by pid $holder)…"
    until flock -w 30 9; do
        holder=$(cat "$lock.pid" 2>/dev/null || echo unknown)
        note "waiting for another build's lock on $lock (held by pid $holder)…"
    done
fi
echo $$ >"$lock.pid"
announced=0

# --- Kubernetes ------------------------------------------------------------
k8s_ldflags() {
    local v=$1 date major minor
    date=$(release_time "$k8s_dir" k8s.io/kubernetes "$v")
    [[ "$v" =~ ^v([0-9]+)\.([0-9]+)\. ]] || die "unexpected version $v"
    major=${BASH_REMATCH[1]}
    minor=${BASH_REMATCH[2]}
    local pkg flags="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
        flags+=" -X $pkg.gitTreeState=clean"
        [[ -n "$date" ]] && flags+=" -X $pkg.buildDate=$date"
    done
    printf '%s' "$flags"
}

k8s_flags=""
if need_build "$k8s_out" "$k8s_dir" kube-apiserver kube-controller-manager kubectl; then
    k8s_flags=$(k8s_ldflags "$k8s_version")
fi
build_tools "kubernetes $k8s_version" "$k8s_dir" "$k8s_out" "$k8s_flags" \
    k8s.io/kubernetes/cmd/kube-apiserver:kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager:kube-controller-manager \
    k8s.io/kubernetes/cmd/kubectl:kubectl

# --- etcd ------------------------------------------------------------------
# etcd's Version is a constant; only GitSHA is settable and the module proxy
# does not tell the commit, so it is left as is.
build_tools "etcd $etcd_version" "$etcd_dir" "$etcd_out" "-s -w" \
    go.etcd.io/etcd/server/v3:etcd

printf 'kube-apiserver=%s\n' "$k8s_out/bin/kube-apiserver"
printf 'kube-controller-manager=%s\n' "$k8s_out/bin/kube-controller-manager"
printf 'kubectl=%s\n' "$k8s_out/bin/kubectl"
printf 'etcd=%s\n' "$etcd_out/bin/etcd"
