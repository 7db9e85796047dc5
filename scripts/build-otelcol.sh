#!/usr/bin/env bash
# Build kcr-otelcol, a minimal OpenTelemetry Collector (OTLP receiver over
# HTTP and gRPC, file exporter), from the Go tools module in tools/otelcol,
# into a cache outside the repository:
#
#   ${KCR_CACHE:-$HOME/.cache/kcr}/otelcol/<version>/bin/otelcol
#
# <version> is the otelcol module's version in tools/otelcol/go.mod. A build
# is reused while that version and the tools module (main.go, go.mod, go.sum)
# are unchanged, so a warm run only checks a stamp file and prints the path.
# A cold build takes several minutes on two cores.
#
# Usage: scripts/build-otelcol.sh [--quiet] [--force]
#   --quiet  print only the binary path (otelcol=PATH), no progress
#   --force  rebuild even if the cache looks current
# Environment:
#   KCR_CACHE   cache root (default $HOME/.cache/kcr)
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
        *) printf 'build-otelcol: unknown argument: %s\n' "$arg" >&2; exit 2 ;;
    esac
done

die() { printf 'build-otelcol: error: %s\n' "$*" >&2; exit 1; }
say() { ((quiet)) || printf 'build-otelcol: %s\n' "$*" >&2; }

command -v go >/dev/null || die "go is not in PATH (Go >= 1.26 is needed)"

src=$repo_root/tools/otelcol
version=$(awk '($1 == "go.opentelemetry.io/collector/otelcol") { print $2; exit }' "$src/go.mod")
[[ -n "$version" ]] || die "no go.opentelemetry.io/collector/otelcol version in $src/go.mod"
out=$cache_root/otelcol/$version

stamp() { { go env GOVERSION; cat "$src/main.go" "$src/go.mod" "$src/go.sum"; } | sha256sum | cut -d' ' -f1; }

export CGO_ENABLED=0
case " ${GOFLAGS:-} " in
    *" -mod="*) ;;
    *) export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod" ;;
esac

current() { ((force == 0)) && [[ -x "$out/bin/otelcol" && -f "$out/bin/.stamp" && "$(cat "$out/bin/.stamp")" == "$(stamp)" ]]; }

# Serialize concurrent builds against the same cache (its own lock: a
# collector build need not wait for a control-plane build).
mkdir -p "$cache_root"
exec 9>"$cache_root/.build-otelcol.lock"
if ! flock -n 9; then
    say "waiting for another build-otelcol.sh to finish"
    flock 9
fi

if current; then
    say "otelcol $version: cached in $out/bin"
else
    mkdir -p "$out"
    tmp=$out/bin.tmp.$$
    rm -rf "$tmp"
    mkdir -p "$tmp"
    verbose=(-v)
    ((quiet)) && verbose=()
    start=$SECONDS
    say "otelcol $version: building (a cold build takes several minutes)"
    if ! (cd "$src" && go build "${verbose[@]}" -trimpath -ldflags "-s -w" -o "$tmp/otelcol" .); then
        rm -rf "$tmp"
        die "go build failed (see the output above)"
    fi
    stamp > "$tmp/.stamp"
    rm -rf "${out:?}/bin"
    mv "$tmp" "$out/bin"
    say "otelcol $version: built in $((SECONDS - start)) s into $out/bin"
fi
printf 'otelcol=%s\n' "$out/bin/otelcol"
