#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh BUILD_DIR: install the kcr build in BUILD_DIR into a fresh prefix, check
# the installed files, then build and run test/consumer against that copy through
# pkg-config and through find_package(kcr), with the shared and static library.
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(find "$prefix" -name 'libkcr.a' -printf '%h\n' | head -n 1)
for f in include/kcr/kcr.h include/kcr/error.h; do
  [ -f "$prefix/$f" ] || { echo "missing $f"; exit 1; }
done
for f in libkcr.a libkcr.so pkgconfig/kcr.pc cmake/kcr/kcrConfig.cmake cmake/kcr/kcrTargets.cmake; do
  [ -e "$libdir/$f" ] || { echo "missing $libdir/$f"; exit 1; }
done

export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o "$work/pc_shared" "$here/main.c" $(pkg-config --cflags --libs kcr)
LD_LIBRARY_PATH=$libdir "$work/pc_shared" | grep -q '^kcr 0\.1\.0: 2024-05-06T07:08:09\.500000Z$'
# shellcheck disable=SC2046
# libkcr.a with its dependencies' shared libraries (pkg-config --static would ask
# for static libcurl and all of its optional dependencies).
cc -std=c11 -Wall -Werror -o "$work/pc_static" "$here/main.c" $(pkg-config --cflags kcr) \
  "$libdir/libkcr.a" $(pkg-config --libs $(pkg-config --print-requires-private kcr)) -lpthread
"$work/pc_static" | grep -q '2024-05-06T07:08:09\.500000Z'
if ldd "$work/pc_static" | grep -q libkcr; then echo "static consumer links libkcr.so"; exit 1; fi
echo "pkg-config consumers: ok"

cmake -S "$here" -B "$work/cm" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cm" >/dev/null
LD_LIBRARY_PATH=$libdir "$work/cm/consumer_shared" | grep -q '2024-05-06T07:08:09\.500000Z'
"$work/cm/consumer_static" | grep -q '2024-05-06T07:08:09\.500000Z'
echo "find_package consumers: ok"
