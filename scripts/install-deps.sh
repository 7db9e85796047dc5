#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install-deps.sh: install everything kcr needs to build and test, from Debian's
# packages. Idempotent: a machine that has every package returns at once; a machine
# that lacks any runs `apt-get update` once and installs what is missing.
# Arguments name more packages a caller needs on top (bench/full.sh: gnuplot-nox
# for its plots), checked and installed the same way.
set -euo pipefail

packages=(
  build-essential cmake pkg-config ninja-build
  libcurl4-openssl-dev libjansson-dev libyaml-dev libssl-dev libuv1-dev libcmocka-dev
  # what `pkg-config --static --libs libcurl` names (-lzstd, -lssh2, ...): the
  # static link line of kcr-static.pc (README.md) resolves only with these
  libbrotli-dev libidn2-dev libkrb5-dev libldap-dev libnghttp2-dev libpsl-dev librtmp-dev
  libssh2-1-dev libzstd-dev zlib1g-dev
  valgrind clang-format clang-tidy cppcheck
  openssl iproute2 procps psmisc curl python3 python3-yaml
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
