#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_install_yaml.sh: deploy/install.yaml is what scripts/build-installer.sh
# makes from config/ (fails when it is stale: run `make build-installer`); the
# installer and `kubectl kustomize config/default` describe the same objects;
# and, against the test cluster ($KCR_TEST_KUBECONFIG), the API server accepts
# every object of it (server-side dry run). Prints "N passed, N failed".
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kcr-install-yaml.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
ok() {
  echo "ok: $1"
  passed=$((passed + 1))
}
bad() {
  echo "FAIL: $1" >&2
  failed=$((failed + 1))
}

if bash "$root/scripts/build-installer.sh" "$work/install.yaml" 2>/dev/null &&
  diff -u "$root/deploy/install.yaml" "$work/install.yaml"; then
  ok "deploy/install.yaml is up to date"
else
  bad "deploy/install.yaml is stale: run 'make build-installer' (scripts/build-installer.sh)"
fi

kubectl=${KCR_KUBECTL:-}
if [ -z "$kubectl" ] && [ -n "${KCR_TEST_KUBECONFIG:-}" ]; then
  kubectl=$(dirname "$KCR_TEST_KUBECONFIG")/bin/kubectl
fi
if [ -n "$kubectl" ] && [ -x "$kubectl" ]; then
  # kind/namespace/name of every object, sorted (top-level kind, metadata's own
  # name and namespace: the keys at two spaces of indentation under metadata:).
  objects() {
    awk '
      function flush() { if (kind != "") print kind "/" ns "/" name; kind = ""; ns = ""; name = ""; md = 0 }
      /^---/ { flush(); next }
      /^kind:/ { kind = $2; next }
      /^metadata:/ { md = 1; next }
      /^[^ #]/ { md = 0 }
      md && /^  name:/ { name = $2 }
      md && /^  namespace:/ { ns = $2 }
      END { flush() }
    ' | sort
  }
  k_objs=$("$kubectl" kustomize "$root/config/default" | objects)
  i_objs=$(objects <"$root/deploy/install.yaml")
  if [ -n "$i_objs" ] && [ "$k_objs" = "$i_objs" ]; then
    ok "install.yaml and kubectl kustomize config/default hold the same $(wc -l <<<"$i_objs") objects"
  else
    bad "install.yaml and config/default differ:"
    diff <(echo "$k_objs") <(echo "$i_objs") >&2
  fi
  if [ -n "${KCR_TEST_KUBECONFIG:-}" ]; then
    k=("$kubectl" --kubeconfig "$KCR_TEST_KUBECONFIG")
    # Namespaced objects need their namespace to exist even in a dry run.
    "${k[@]}" get namespace kcr-system >/dev/null 2>&1 ||
      "${k[@]}" create namespace kcr-system >/dev/null
    if "${k[@]}" apply --dry-run=server -f "$root/deploy/install.yaml" >"$work/apply.log" 2>&1; then
      ok "the API server accepts every object of install.yaml (dry run)"
    else
      bad "server-side dry run of install.yaml failed:"
      cat "$work/apply.log" >&2
    fi
  fi
else
  echo "skip: no kubectl (set KCR_KUBECTL or KCR_TEST_KUBECONFIG) for the kustomize and server checks"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
