#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libcurl.sh [VERSION]: print the prefix of kcr's minimal static libcurl
# (build-curl.sh's: lib/libcurl.a, include/curl, lib/pkgconfig/libcurl.pc),
# building it the first time into $KCR_CACHE_DIR/static/VERSION
# (KCR_CACHE_DIR defaults to ~/.cache/kcr). VERSION is the Debian version of
# curl, by default that of the installed libcurl4-openssl-dev, so that the
# archive matches the headers libkcr was compiled against.
#
# kcr's static build (scripts/build-static.sh), kcr's Dockerfile and a kcr-gen
# project's static build (installed as <datadir>/kcr/scripts/static/libcurl.sh,
# run by find_package(kcr)'s kcr_full_static() and by the project's
# Dockerfile) all come through here, so they share one cache entry per version.
#
# The prefix is the only line on stdout; progress goes to stderr. Builds of one
# cache are serialized by a lock, and a half-built prefix is never reused: it
# is built under a temporary name and renamed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache_root=${KCR_CACHE_DIR:-${HOME:?HOME is not set}/.cache/kcr}
version=${1:-}
if [ -z "$version" ]; then
  version=$(dpkg-query -W -f='${Version}' libcurl4-openssl-dev 2>/dev/null) || {
    echo "libcurl: libcurl4-openssl-dev is not installed: give the curl version" >&2
    exit 1
  }
fi
prefix=$cache_root/static/$version

mkdir -p "$cache_root/static"
exec {lock}>"$prefix.lock"
flock "$lock"
if [ -f "$prefix/lib/libcurl.a" ] && [ -f "$prefix/lib/pkgconfig/libcurl.pc" ]; then
  echo "libcurl: reusing libcurl $version from $prefix" >&2
else
  echo "libcurl: building libcurl $version from Debian's source package" >&2
  rm -rf "$prefix.tmp"
  # curl writes its prefix into libcurl.pc and curl-config: build for the
  # temporary path, then point them at the final one before the rename.
  bash "$here/build-curl.sh" "$version" "$prefix.tmp" >&2
  sed -i "s|$prefix.tmp|$prefix|g" "$prefix.tmp/lib/pkgconfig/libcurl.pc" "$prefix.tmp/bin/curl-config"
  rm -rf "$prefix"
  mv "$prefix.tmp" "$prefix"
fi
printf '%s\n' "$prefix"
