#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/link.sh: sourced by the bench scripts that build kcr's contestants, so
# that kcr is measured as it ships. Needs $root (the repository) and $build
# (the bench build directory, relative to $root). Sets:
#   kcr_lib        the libkcr.a to link
#   kcr_libs       (array) what follows it on the link line
#   kcr_operator   the kcr-operator binary
# KCR_LINK=static (the default): kcr-operator as the Dockerfile makes it
#   (scripts/build-static.sh: one static executable, libcurl built with
#   HTTP/1.1, HTTP/2, OpenSSL, zlib and c-ares only), and the other
#   contestants linked the same way, against that libcurl.
# KCR_LINK=shared: linked against the machine's shared libraries, Debian's
#   libcurl among them, which loads about 20 libraries kcr never calls
#   (GnuTLS, p11-kit, Kerberos, LDAP, libssh2, RTMP...): about 6 MiB more
#   RSS in an idle process (docs/benchmarks.md, "Idle memory").
case ${KCR_LINK:-static} in
static)
  KCR_STATIC_BUILD_DIR=$root/$build/static bash "$root/scripts/build-static.sh" \
    "$root/$build/static/bin" >/dev/null
  kcr_lib=$root/$build/static/kcr/libkcr.a
  read -r -a kcr_libs <<<"-static $(PKG_CONFIG_PATH="$(cat "$root/$build/static/curl-pkgconfig")" \
    pkg-config --static --libs libcurl jansson yaml-0.1 libuv-static openssl) -pthread"
  kcr_operator=$root/$build/static/bin/kcr-operator
  ;;
shared)
  cmake -S "$root" -B "$root/$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKCR_BUILD_TESTS=OFF -DKCR_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$root/$build" --target kcr_static kcr_operator >/dev/null
  kcr_lib=$root/$build/libkcr.a
  read -r -a kcr_libs <<<"$(pkg-config --libs jansson libcurl libuv yaml-0.1 openssl) -lm -lpthread"
  kcr_operator=$root/$build/cmd/kcr-operator/kcr-operator
  ;;
*)
  echo "KCR_LINK is static or shared, not ${KCR_LINK}" >&2
  exit 2
  ;;
esac
