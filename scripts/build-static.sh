#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build-static.sh [--deps-only] [OUT_DIR]: build kcr-operator as one fully static executable
# (`ldd` says "not a dynamic executable") into OUT_DIR (default build/static/bin):
#   kcr-operator        stripped, the binary to ship
#   kcr-operator.debug  the same, unstripped
# The Dockerfile runs this same script.
#
#  1. Debian packages: the -dev packages of jansson, libyaml, libuv, OpenSSL,
#     zlib, nghttp2 and c-ares, which ship static archives (.a).
#  2. libcurl: built from Debian's source package of the libcurl the machine has
#     (scripts/static/build-curl.sh), HTTP/1.1 + HTTP/2 + OpenSSL + zlib + c-ares
#     only; cached in ~/.cache/kcr/static/<curl-version>/ ($KCR_CACHE_DIR
#     overrides ~/.cache/kcr) and reused (scripts/static/libcurl.sh).
#  3. libkcr.a: the library's own CMake build (target kcr_static) against that
#     libcurl, in build/static/kcr (Release, no tests).
#  4. The operator: cmd/kcr-operator/app/*.c and cmd/kcr-operator/*.c compiled and linked
#     with -static and `pkg-config --static` link lines. This step does not rely on
#     the top-level CMakeLists.txt knowing the operator.
# --deps-only stops after step 2: the packages and the cached libcurl, so that a
# test fixture can pay for the cold build before any timed test runs.
# Environment: KCR_CURL_VERSION (Debian version of curl to build; default: the
# installed libcurl4-openssl-dev's), CC (default cc), KCR_OPERATOR_VERSION
# (default: git describe, else the library version).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
deps_only=0
if [ "${1:-}" = --deps-only ]; then
  deps_only=1
  shift
fi
out=${1:-$root/build/static/bin}
build=${KCR_STATIC_BUILD_DIR:-$root/build/static}
cc=${CC:-cc}
jobs=$(nproc)

packages=(build-essential cmake ninja-build pkg-config dpkg-dev file
  libssl-dev zlib1g-dev libjansson-dev libyaml-dev libuv1-dev libc-ares-dev libnghttp2-dev
  libcurl4-openssl-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -ne 0 ]; then
  echo "build-static: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

curl_version=${KCR_CURL_VERSION:-$(dpkg-query -W -f='${Version}' libcurl4-openssl-dev)}
# Built once per version into the cache, which kcr-gen projects' static builds
# share (scripts/static/libcurl.sh); KCR_CACHE_DIR reaches it through the
# environment.
curl_prefix=$(bash scripts/static/libcurl.sh "$curl_version")

# Where the static libcurl's pkg-config file is, for others that link against
# it (bench/link.sh).
mkdir -p "$build"
echo "$curl_prefix/lib/pkgconfig" >"$build/curl-pkgconfig"

if [ "$deps_only" = 1 ]; then
  echo "build-static: dependencies ready (libcurl $curl_version in $curl_prefix)" >&2
  exit 0
fi

export PKG_CONFIG_PATH="$curl_prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
echo "build-static: libkcr.a in $build/kcr" >&2
cmake -S "$root" -B "$build/kcr" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$cc" \
  -DKCR_BUILD_TESTS=OFF -DBUILD_TESTING=OFF -DKCR_INTEGRATION=OFF >/dev/null
cmake --build "$build/kcr" --target kcr_static kcr_gen_app_types -j "$jobs" >/dev/null

version=${KCR_OPERATOR_VERSION:-$(git -C "$root" describe --always --dirty 2>/dev/null || true)}
[ -n "$version" ] || version=$(sed -nE 's/^#define KCR_VERSION_STRING "(.*)"/\1/p' include/kcr/common.h)

mkdir -p "$out"
# The operator's C types, which kcr-gen wrote into the build tree (cmd/kcr-gen). (unquoted below, so the globs expand)
gen_dirs=("$build/kcr/kcr-gen/kcr_gen_app_types")
mapfile -t sources < <(ls cmd/kcr-operator/app/*.c cmd/kcr-operator/*.c ${gen_dirs[@]/%//*.c})
# libkcr.a holds the built-in kinds' types (kcr/k8s/*.h, in the build tree).
gen_dirs+=("$build/kcr/k8s/include")
read -r -a libs <<<"$(pkg-config --static --libs libcurl jansson yaml-0.1 libuv-static openssl)"
echo "build-static: linking kcr-operator (${#sources[@]} sources)" >&2
"$cc" -std=c11 -O2 -g -ffunction-sections -fdata-sections -Wl,--gc-sections -D_GNU_SOURCE -DKCR_OPERATOR_VERSION="\"$version\"" \
  -Iinclude -Icmd/kcr-operator "${gen_dirs[@]/#/-I}" $(pkg-config --cflags libcurl) \
  -static -o "$out/kcr-operator.debug" "${sources[@]}" "$build/kcr/libkcr.a" "${libs[@]}" \
  -pthread 2>"$build/link.log" || {
  cat "$build/link.log" >&2
  echo "build-static: the static link failed" >&2
  exit 1
}
# glibc warns that getaddrinfo/getpwnam in a static binary need NSS at run time;
# kcr resolves through c-ares, so those paths are not taken. Show anything else.
grep -v -E 'statically linked applications requires at runtime|in function `' "$build/link.log" >&2 || true
strip -o "$out/kcr-operator" "$out/kcr-operator.debug"

if ldd "$out/kcr-operator" >/dev/null 2>&1; then
  echo "build-static: $out/kcr-operator is dynamic:" >&2
  ldd "$out/kcr-operator" >&2
  exit 1
fi
size=$(stat -c %s "$out/kcr-operator")
echo "build-static: $out/kcr-operator: static, $size bytes stripped ($((size / 1024)) KiB), libcurl $curl_version"
