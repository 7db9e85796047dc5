#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build-curl.sh VERSION PREFIX: build a static libcurl from Debian's source
# package `curl` (exactly VERSION, e.g. 7.88.1-10+deb12u15) and install it into
# PREFIX (lib/libcurl.a, include/curl, lib/pkgconfig/libcurl.pc).
#
# Why: Debian's own libcurl.a was configured with GSS-API, LDAP, libpsl, libidn2,
# librtmp, libssh2, brotli and zstd, and several of those exist only as shared
# libraries, so it cannot go into a static binary. This libcurl keeps only what
# kcr uses: HTTP/1.1 and HTTP/2 (nghttp2), TLS through OpenSSL, zlib, and c-ares
# for name resolution (a scratch image has no glibc NSS modules, so getaddrinfo
# cannot be used there).
#
# The machine's apt sources name no deb-src entry, so the script writes its own
# sources list into a temporary directory, pointing at the Debian archives apt
# already uses (scripts/static/debian-mirror.sh reads them; no host is named
# here), and runs apt-get with its own lists and cache directories so the
# system's package lists are left untouched.
set -euo pipefail
version=${1:?usage: build-curl.sh VERSION PREFIX}
prefix=${2:?usage: build-curl.sh VERSION PREFIX}
here=$(cd "$(dirname "$0")" && pwd)
jobs=$(nproc)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcr-curl.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/src"

mirrors=$(bash "$here/debian-mirror.sh")
if [ -z "$mirrors" ]; then
  echo "build-curl: no Debian archive found in /etc/apt; cannot fetch the curl source" >&2
  exit 1
fi
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
opt=""
[ -f "$keyring" ] && opt="[signed-by=$keyring] "
while read -r uri suite; do
  echo "deb-src ${opt}$uri $suite main"
done <<<"$mirrors" >"$tmp/sources.list"
echo "build-curl: source list:" >&2
sed 's/^/  /' "$tmp/sources.list" >&2

apt_opts=(
  -o "Dir::Etc::sourcelist=$tmp/sources.list" -o "Dir::Etc::sourceparts=-"
  -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache"
  -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
  -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1"
)
apt-get "${apt_opts[@]}" -qq update
(cd "$tmp/src" && apt-get "${apt_opts[@]}" -qq source "curl=$version") >&2
srcdir=$(find "$tmp/src" -mindepth 1 -maxdepth 1 -type d -name 'curl-*' | head -n 1)
if [ -z "$srcdir" ]; then
  echo "build-curl: apt-get source curl=$version produced no source tree" >&2
  exit 1
fi

cd "$srcdir"
# Debian's series ends with the patches that turn the tree into the GnuTLS and NSS
# flavours (libcurl-gnutls, libcurl-nss); debian/rules pops them for the OpenSSL
# build, and so does this script.
for p in 99_nss.patch 90_gnutls.patch; do
  if [ -f "debian/patches/$p" ]; then
    patch -R -p1 -s <"debian/patches/$p"
  fi
done
# Only the protocols and features kcr uses; everything else off, so that nothing
# pulls in a library Debian ships only shared.
./configure --prefix="$prefix" --disable-shared --enable-static --with-pic \
  --with-openssl --with-nghttp2 --with-zlib --enable-ares \
  --enable-http --disable-ftp --disable-file --disable-ldap --disable-ldaps \
  --disable-rtsp --disable-dict --disable-telnet --disable-tftp --disable-pop3 \
  --disable-imap --disable-smtp --disable-gopher --disable-mqtt --disable-smb \
  --disable-manual --disable-ntlm-wb --disable-unix-sockets \
  --without-gssapi --without-libpsl --without-libidn2 --without-brotli --without-zstd \
  --without-libssh2 --without-libssh --without-librtmp --without-hyper \
  --without-nghttp3 --without-ngtcp2 --without-quiche --without-msh3 \
  >"$tmp/configure.log" 2>&1 || {
  tail -n 40 "$tmp/configure.log" >&2
  echo "build-curl: configure failed" >&2
  exit 1
}
make -j "$jobs" -C lib >"$tmp/make.log" 2>&1 || {
  tail -n 40 "$tmp/make.log" >&2
  echo "build-curl: make failed" >&2
  exit 1
}
make -C lib install >/dev/null
make -C include install >/dev/null
make install-pkgconfigDATA install-binSCRIPTS >/dev/null
echo "build-curl: libcurl $version installed in $prefix" >&2
