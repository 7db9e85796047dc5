#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh BUILD_DIR: install the kcr build in BUILD_DIR into a fresh prefix with
# `make install-lib` (the library's components only: no kcr-operator), check
# the installed files, then build and run two programs against that copy, each
# the four ways README.md documents (pkg-config: kcr and, with --static,
# kcr-static; find_package(kcr): kcr::kcr and kcr::kcr_static):
#   - test/consumer/main.c, a small program over the public headers;
#   - examples/configmap-mirror (main.c + mirror.c), a real operator that calls
#     json_* itself, so it links only when the package carries jansson;
#   - mirror_test.c, a unit test of that operator with the installed testing
#     kit (kcr/testing.h: fake client, reconcile context).
# run.sh --prefix PREFIX: the same checks on a tree already installed there
# (test/deb/run.sh uses it on the Debian packages unpacked into a temporary root).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
example=$(cd "$here/../../examples/configmap-mirror" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$1" = "--prefix" ]; then
  prefix=$2
else
  prefix=$work/prefix
  make -C "$src" --no-print-directory install-lib BUILD_DIR="$(cd "$1" && pwd)" \
    PREFIX="$prefix" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
  [ ! -e "$prefix/bin/kcr-operator" ] || { echo "install-lib installed kcr-operator"; exit 1; }
fi

libdir=$(find "$prefix" -name 'libkcr.a' -printf '%h\n' | head -n 1)
[ -n "$libdir" ] || { echo "no libkcr.a under $prefix"; exit 1; }
# share/kcr: what a fully static build and its image need (kcr_full_static(),
# a kcr-gen project's Dockerfile and `make image`), in the repository's layout.
for f in include/kcr/kcr.h include/kcr/error.h bin/kcr-gen bin/kcr-envtest \
  share/kcr/scripts/static/libcurl.sh share/kcr/scripts/static/build-curl.sh \
  share/kcr/scripts/static/debian-mirror.sh share/kcr/scripts/static/image-files.sh \
  share/kcr/scripts/static/kcr-image.sh share/kcr/scripts/build-go-tool.sh \
  share/kcr/tools/kcr-image/go.mod share/kcr/tools/kcr-image/main.go; do
  [ -f "$prefix/$f" ] || { echo "missing $f"; exit 1; }
done
for f in libkcr.a libkcr.so pkgconfig/kcr.pc pkgconfig/kcr-static.pc cmake/kcr/kcrConfig.cmake \
  cmake/kcr/kcrTargets.cmake cmake/kcr/kcrStatic.cmake; do
  [ -e "$libdir/$f" ] || { echo "missing $libdir/$f"; exit 1; }
done

# check_consumer BIN: the small consumer prints the version and a parsed time.
check_consumer() {
  "$@" | grep -q '^kcr 0\.1\.0: 2024-05-06T07:08:09\.500000Z$'
}
# check_mirror BIN: the operator starts, loads its configuration and, with no
# cluster (a kubeconfig that does not exist), stops with a clear error and exit 1.
check_mirror() {
  local out rc=0
  out=$("$@" --kubeconfig "$work/no-such-kubeconfig" 2>&1) || rc=$?
  [ "$rc" -eq 1 ] || { echo "configmap-mirror exited $rc: $out"; exit 1; }
  case $out in
    configmap-mirror:*no-such-kubeconfig*) ;;
    *) echo "configmap-mirror said: $out"; exit 1 ;;
  esac
}
# check_ok BIN: a test program that prints "ok" and exits 0.
check_ok() {
  local out
  out=$("$@") || { echo "$1 failed: $out"; exit 1; }
  [ "$out" = ok ] || { echo "$1 said: $out"; exit 1; }
}
# not_dynamic BIN: a static build must not need libkcr.so.
not_dynamic() {
  if ldd "$1" | grep -q libkcr; then echo "$1 links libkcr.so"; exit 1; fi
}

export PKG_CONFIG_PATH=$libdir/pkgconfig
# The documented recipe, unchanged: Requires: jansson brings -ljansson.
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o "$work/pc_shared" "$here/main.c" $(pkg-config --cflags --libs kcr)
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o "$work/pc_mirror_shared" -I"$example" "$example/main.c" \
  "$example/mirror.c" $(pkg-config --cflags --libs kcr)
LD_LIBRARY_PATH=$libdir check_consumer "$work/pc_shared"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o "$work/pc_mirror_test_shared" -I"$example" "$here/mirror_test.c" \
  "$example/mirror.c" $(pkg-config --cflags --libs kcr)
LD_LIBRARY_PATH=$libdir check_mirror "$work/pc_mirror_shared"
LD_LIBRARY_PATH=$libdir check_ok "$work/pc_mirror_test_shared"
# Static, the documented line: kcr-static.pc names libkcr.a by its path, and
# --static adds every library libcurl and the others need (install-deps.sh
# brings their -dev packages).
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o "$work/pc_static" "$here/main.c" \
  $(pkg-config --static --cflags --libs kcr-static)
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o "$work/pc_mirror_static" -I"$example" "$example/main.c" \
  "$example/mirror.c" $(pkg-config --static --cflags --libs kcr-static)
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o "$work/pc_mirror_test_static" -I"$example" "$here/mirror_test.c" \
  "$example/mirror.c" $(pkg-config --static --cflags --libs kcr-static)
check_consumer "$work/pc_static"
check_mirror "$work/pc_mirror_static"
check_ok "$work/pc_mirror_test_static"
not_dynamic "$work/pc_static"
not_dynamic "$work/pc_mirror_static"
echo "pkg-config consumers (shared, static): ok"

cmake -S "$here" -B "$work/cm" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DKCR_EXAMPLE_DIR="$example" >/dev/null
cmake --build "$work/cm" >/dev/null
LD_LIBRARY_PATH=$libdir check_consumer "$work/cm/consumer_shared"
LD_LIBRARY_PATH=$libdir check_mirror "$work/cm/mirror_shared"
check_consumer "$work/cm/consumer_static"
check_mirror "$work/cm/mirror_static"
LD_LIBRARY_PATH=$libdir check_ok "$work/cm/mirror_test_shared"
check_ok "$work/cm/mirror_test_static"
not_dynamic "$work/cm/consumer_static"
not_dynamic "$work/cm/mirror_static"
echo "find_package consumers (shared, static): ok"
