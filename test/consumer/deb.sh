#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# deb.sh BUILD_DIR: build the Debian packages of the kcr build in BUILD_DIR with
# CPack (libkcr0, libkcr-dev, kcr-operator), install them with `dpkg -i` into a
# temporary root (its own admin directory: the host's package database and
# files are never touched), check what landed where, then build and run the
# consumer (test/consumer/run.sh) against the files installed there.
#
# The temporary root holds only these packages, so their dependencies (libc,
# libcurl4, the -dev packages) are satisfied by the host, not by the root's
# database: dpkg runs with --force-depends. Maintainer scripts run chrootless
# (the root has no shell to chroot into); libkcr0's postinst only calls
# ldconfig, which a stub on PATH records instead of touching the host's cache.
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root

(cd "$build" && cpack -G DEB -B "$work/pkg" >"$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log"; exit 1; }
debs=("$work"/pkg/*.deb)
[ "${#debs[@]}" -eq 3 ] || { echo "expected 3 packages, got: ${debs[*]}"; exit 1; }

# field DEB NAME: one control field of a package file.
field() { dpkg-deb -f "$1" "$2"; }
for d in "${debs[@]}"; do
  files=$(dpkg-deb -c "$d") # (grep -q on the pipe would cut dpkg-deb off: SIGPIPE)
  case $(field "$d" Package) in
    libkcr0)
      echo "$files" | grep -q '/libkcr\.so\.0\.' || { echo "libkcr0 has no libkcr.so.0.*"; exit 1; }
      if echo "$files" | grep -q 'include/\|\.a$'; then echo "libkcr0 has dev files"; exit 1; fi
      field "$d" Depends | grep -q libjansson4 || { echo "libkcr0 does not depend on libjansson4"; exit 1; } ;;
    libkcr-dev)
      for f in include/kcr/kcr.h libkcr.a libkcr.so pkgconfig/kcr.pc cmake/kcr/kcrConfig.cmake; do
        echo "$files" | grep -q "$f" || { echo "libkcr-dev lacks $f"; exit 1; }
      done
      field "$d" Depends | grep -q 'libkcr0 (= ' || { echo "libkcr-dev does not pin libkcr0"; exit 1; }
      field "$d" Depends | grep -q 'libjansson-dev' || { echo "libkcr-dev lacks libjansson-dev"; exit 1; } ;;
    kcr-operator)
      echo "$files" | grep -q '/usr/bin/kcr-operator$' || { echo "no /usr/bin/kcr-operator"; exit 1; } ;;
    *) echo "unexpected package $d"; exit 1 ;;
  esac
done

mkdir -p "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/triggers" \
  "$work/stub"
: >"$root/var/lib/dpkg/status"
: >"$root/var/lib/dpkg/available"
printf '#!/bin/sh\necho "ldconfig $*" >>"%s"\n' "$work/ldconfig.log" >"$work/stub/ldconfig"
chmod +x "$work/stub/ldconfig"
PATH=$work/stub:$PATH dpkg --root="$root" --log="$work/dpkg.log" --force-depends \
  --force-script-chrootless --force-not-root -i "${debs[@]}" >"$work/dpkg.out" 2>&1 ||
  { cat "$work/dpkg.out"; exit 1; }
for p in libkcr0 libkcr-dev kcr-operator; do
  status=$(dpkg-query --root="$root" -W -f='${Status}' "$p")
  [ "$status" = "install ok installed" ] || { echo "$p: $status"; cat "$work/dpkg.out"; exit 1; }
done
grep -q '^ldconfig' "$work/ldconfig.log" || { echo "libkcr0's postinst did not run ldconfig"; exit 1; }
# The -dev link resolves to the runtime package's file.
so=$(find "$root/usr" -name libkcr.so)
[ "$(dpkg-query --root="$root" -S "$(readlink -f "$so" | sed "s|^$root||")" | cut -d: -f1)" = libkcr0 ] ||
  { echo "libkcr.so does not resolve into libkcr0"; exit 1; }
echo "dpkg -i into $root: libkcr0, libkcr-dev, kcr-operator installed"

"$root/usr/bin/kcr-operator" --version | grep -q . || { echo "kcr-operator --version failed"; exit 1; }
# The test env's tools came along in libkcr-dev, in the layout they expect.
"$root/usr/bin/kcr-envtest" --help | grep -q 'setup-envtest' || { echo "kcr-envtest --help failed"; exit 1; }
[ -x "$root/usr/share/kcr/scripts/cluster.sh" ] && [ -f "$root/usr/share/kcr/tools/kwok/go.mod" ] ||
  { echo "libkcr-dev lacks the test env's scripts"; exit 1; }
bash "$here/run.sh" --prefix "$root/usr"
echo "consumer against the installed packages: ok"
