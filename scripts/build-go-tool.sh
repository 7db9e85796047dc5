#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build-go-tool.sh [--quiet] [--force] NAME: build one of the deploy tools from
# its Go module in tools/NAME (fetched through the Go module proxy) into a cache
# outside the repository, and print NAME=PATH:
#
#   helm       helm.sh/helm/v3's cmd/helm  -> $KCR_CACHE/helm/<helm version>/bin/helm
#   kcr-image  tools/kcr-image/main.go     -> $KCR_CACHE/kcr-image/<go-containerregistry version>/bin/kcr-image
#   otelcol    tools/otelcol/main.go       -> $KCR_CACHE/otelcol/<collector version>/bin/otelcol
#              (scripts/build-otelcol.sh; the tracing test's collector)
#   pbschema-gen  tools/pbschema-gen/main.go -> $KCR_CACHE/pbschema-gen/<k8s.io/api version>/bin/pbschema-gen
#              (scripts/gen-pb-schema.sh; the protobuf transcoder's tables)
#
# As scripts/build-control-plane.sh does: a build is reused while a stamp of the
# Go version and the module's go.mod, go.sum and *.go files is unchanged; builds
# of the same cache are serialized by a lock; a failed build leaves no binary.
# Environment: KCR_CACHE (default $HOME/.cache/kcr), GOFLAGS (passed through,
# -mod=mod added).
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache_root=${KCR_CACHE:-${HOME:?HOME is not set}/.cache/kcr}
quiet=0
force=0
name=
for arg in "$@"; do
  case "$arg" in
    --quiet) quiet=1 ;;
    --force) force=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) printf 'build-go-tool: unknown argument: %s\n' "$arg" >&2; exit 2 ;;
    *) name=$arg ;;
  esac
done

die() { printf 'build-go-tool: error: %s\n' "$*" >&2; exit 1; }
say() { ((quiet)) || printf 'build-go-tool: %s\n' "$*" >&2; }

case "$name" in
  helm) module=helm.sh/helm/v3 pkg=helm.sh/helm/v3/cmd/helm ;;
  kcr-image) module=github.com/google/go-containerregistry pkg=. ;;
  otelcol) module=go.opentelemetry.io/collector/otelcol pkg=. ;;
  pbschema-gen) module=k8s.io/api pkg=. ;;
  "") die "usage: build-go-tool.sh [--quiet] [--force] helm|kcr-image|otelcol|pbschema-gen" ;;
  *) die "unknown tool $name (helm, kcr-image, otelcol, pbschema-gen)" ;;
esac
command -v go >/dev/null || die "go is not in PATH (Go >= 1.26 is needed)"

src=$repo_root/tools/$name
version=$(awk -v m="$module" '($1 == m || ($1 == "require" && $2 == m)) {
  v = ($1 == m) ? $2 : $3; if (v ~ /^v/) { print v; exit } }' "$src/go.mod")
[[ -n "$version" ]] || die "no $module version in $src/go.mod"
out=$cache_root/$name/$version
bin=$out/bin/$name

stamp() {
  { go env GOVERSION; cat "$src/go.mod" "$src/go.sum"; cat "$src"/*.go 2>/dev/null || true; } |
    sha256sum | cut -d' ' -f1
}

export CGO_ENABLED=0
case " ${GOFLAGS:-} " in
  *" -mod="*) ;;
  *) export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod" ;;
esac

mkdir -p "$cache_root/$name"
exec 9>"$cache_root/$name/.build.lock"
if ! flock -n 9; then
  say "waiting for another build of $name to finish"
  flock 9
fi

if ((force)) || [[ ! -x "$bin" || ! -f "$out/bin/.stamp" || "$(cat "$out/bin/.stamp")" != "$(stamp)" ]]; then
  tmp=$out/bin.tmp.$$
  rm -rf "$tmp"
  mkdir -p "$tmp"
  ldflags="-s -w"
  # helm prints this version (helm version); without it, it says v3.x-dev-ish "main".
  [[ "$name" == helm ]] && ldflags+=" -X helm.sh/helm/v3/internal/version.version=$version"
  say "$name $version: building (a cold build takes minutes on two cores)"
  start=$SECONDS
  if ! (cd "$src" && go build -trimpath -ldflags "$ldflags" -o "$tmp/$name" "$pkg"); then
    rm -rf "$tmp"
    die "$name: go build failed (see the output above)"
  fi
  stamp >"$tmp/.stamp"
  rm -rf "${out:?}/bin"
  mv "$tmp" "$out/bin"
  say "$name $version: built in $((SECONDS - start)) s into $out/bin"
else
  say "$name $version: cached in $out/bin"
fi
printf '%s=%s\n' "$name" "$bin"
