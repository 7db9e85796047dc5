#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_static_binary.sh [BUILD_DIR]: build kcr-operator with scripts/build-static.sh
# (into BUILD_DIR, default a temporary directory) and check that
#  1. ldd says it is not a dynamic executable;
#  2. in an empty root directory (chroot; `unshare -r` when not root) holding
#     only the binary, --version runs, a bad flag exits 2, and with no
#     kubeconfig it fails cleanly (exit 1, a clear message, no crash);
#  3. with /etc/hosts and the test cluster's kubeconfig
#     ($KCR_TEST_KUBECONFIG) in that root it loads the config, and refuses
#     --leader-elect without a lease namespace (no service-account file in the
#     root) with a clear message and exit 1. (test_static_reconcile.sh runs the
#     same kind of root through a whole reconcile.)
# Prints "N passed, N failed".
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kcr-static-test.XXXXXX")
build=${1:-$work/build}
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() { # NAME COMMAND...: run, count
  local name=$1
  shift
  if "$@"; then
    echo "ok: $name"
    passed=$((passed + 1))
  else
    echo "FAIL: $name" >&2
    failed=$((failed + 1))
  fi
}

expect() { # RC WANT_RC OUTPUT PATTERN
  [ "$1" -eq "$2" ] && grep -q -e "$4" <<<"$3"
}

if ! KCR_STATIC_BUILD_DIR="$build" bash "$root/scripts/build-static.sh" "$build/bin"; then
  echo "FAIL: scripts/build-static.sh" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
bin=$build/bin/kcr-operator

check "ldd: not a dynamic executable" grep -q 'not a dynamic executable' <<<"$(ldd "$bin" 2>&1)"

jail=$work/root
mkdir -p "$jail"
cp "$bin" "$jail/kcr-operator"
chroot_bin=$(command -v chroot)
unshare_bin=$(command -v unshare)
in_jail() { # run the binary in the jail with an empty environment, bounded in time
  if [ "$(id -u)" -eq 0 ]; then
    timeout 30 env -i "$chroot_bin" "$jail" /kcr-operator "$@"
  else
    timeout 30 env -i "$unshare_bin" -r "$chroot_bin" "$jail" /kcr-operator "$@"
  fi
}
check "the root holds only the binary" test "$(find "$jail" -mindepth 1 | wc -l)" -eq 1

out=$(in_jail --version 2>&1)
rc=$?
check "--version in an empty root (rc $rc: $out)" expect "$rc" 0 "$out" '^kcr-operator '

out=$(in_jail --no-such-flag 2>&1)
rc=$?
check "bad flag exits 2 (rc $rc)" expect "$rc" 2 "$out" 'unknown flag: --no-such-flag'

out=$(in_jail --log-format=console 2>&1)
rc=$?
check "no kubeconfig: clean failure (rc $rc: $out)" \
  expect "$rc" 1 "$out" 'unable to load the REST config'

out=$(in_jail --kubeconfig=/missing 2>&1)
rc=$?
check "missing --kubeconfig file: clean failure (rc $rc)" expect "$rc" 1 "$out" '/missing'

if [ -n "${KCR_TEST_KUBECONFIG:-}" ] && [ -f "$KCR_TEST_KUBECONFIG" ]; then
  mkdir -p "$jail/etc"
  printf '127.0.0.1 localhost\n::1 localhost\n' >"$jail/etc/hosts"
  # The kubeconfig may name its certificates by path: inline them.
  kubectl=$(dirname "$KCR_TEST_KUBECONFIG")/bin/kubectl
  if [ -x "$kubectl" ]; then
    "$kubectl" --kubeconfig "$KCR_TEST_KUBECONFIG" config view --raw --flatten >"$jail/kubeconfig"
  else
    cp "$KCR_TEST_KUBECONFIG" "$jail/kubeconfig"
  fi
  # Bounded: an operator that started running would otherwise never exit.
  out=$(in_jail --kubeconfig=/kubeconfig --log-format=console --leader-elect \
    --health-probe-bind-address=127.0.0.1:0 2>&1)
  rc=$?
  check "kubeconfig loads in the empty root (rc $rc)" \
    expect "$rc" 1 "$out" 'REST config from /kubeconfig: server https://'
  check "--leader-elect without a lease namespace is refused" expect "$rc" 1 "$out" \
    'unable to set up the manager'

fi

size=$(stat -c %s "$bin")
echo "kcr-operator static binary: $size bytes stripped"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
