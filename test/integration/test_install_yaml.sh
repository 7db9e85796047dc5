#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_install_yaml.sh: deploy/install.yaml is what scripts/build-installer.sh
# makes from config/ (fails when it is stale: run `make build-installer`); the
# installer and `kubectl kustomize config/default` describe the same objects,
# and their references resolve (check_manifests.py); IMG=x changes the image
# and nothing else; an overlay with namePrefix and namespace (and
# config/default's replacements copied, as its comment says) renames every
# object and its references follow; and, against the test cluster
# ($KCR_TEST_KUBECONFIG), the API server accepts every object (server-side dry
# run; cert-manager's Issuer and Certificate get stand-in CRDs when the cluster
# has none). Prints "N passed, N failed".
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
  "$kubectl" kustomize "$root/config/default" >"$work/default.yaml"
  k_objs=$(objects <"$work/default.yaml")
  i_objs=$(objects <"$root/deploy/install.yaml")
  if [ -n "$i_objs" ] && [ "$k_objs" = "$i_objs" ]; then
    ok "install.yaml and kubectl kustomize config/default hold the same $(wc -l <<<"$i_objs") objects"
  else
    bad "install.yaml and config/default differ:"
    diff <(echo "$k_objs") <(echo "$i_objs") >&2
  fi
  if python3 "$root/test/integration/check_manifests.py" kcr- kcr-system <"$work/default.yaml" >"$work/check.log"; then
    ok "config/default: kcr- names in kcr-system, every reference resolves ($(tail -n 1 "$work/check.log"))"
  else
    bad "config/default's references:"
    cat "$work/check.log" >&2
  fi

  # IMG: the image, and only the image, changes (as `make build-installer IMG=...`).
  img=registry.test:5000/team/kcr-operator:v9
  if KUBECTL=$kubectl IMG=$img bash "$root/scripts/build-installer.sh" "$work/img.yaml" 2>"$work/img.log"; then
    changed=$(diff "$root/deploy/install.yaml" "$work/img.yaml" | grep -c '^[<>]')
    if grep -q -x "        image: $img" "$work/img.yaml" && [ "$changed" -eq 2 ]; then
      ok "IMG=$img sets the manager's image and changes nothing else"
    else
      bad "IMG=$img: $changed lines changed; image lines: $(grep 'image:' "$work/img.yaml" | tr -s ' ')"
    fi
  else
    bad "build-installer.sh with IMG failed: $(cat "$work/img.log")"
  fi

  # A namePrefix overlay: names and references follow.
  mkdir -p "$work/overlay"
  python3 - "$root/config/default/kustomization.yaml" \
    "$(realpath --relative-to="$work/overlay" "$root/config/default")" >"$work/overlay/kustomization.yaml" <<'PY'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
yaml.safe_dump({"namePrefix": "team-", "namespace": "team-system", "resources": [sys.argv[2]],
                "replacements": d["replacements"]}, sys.stdout)
PY
  if "$kubectl" kustomize "$work/overlay" >"$work/overlay.yaml" 2>"$work/overlay.log" &&
    python3 "$root/test/integration/check_manifests.py" team-kcr- team-system <"$work/overlay.yaml" >"$work/check.log" &&
    [ "$(objects <"$work/overlay.yaml" | wc -l)" -eq "$(wc -l <<<"$k_objs")" ]; then
    ok "a namePrefix team- overlay renames all $(wc -l <<<"$k_objs") objects and every reference follows"
  else
    bad "the namePrefix overlay:"
    cat "$work/overlay.log" "$work/check.log" >&2
  fi
  if [ -n "${KCR_TEST_KUBECONFIG:-}" ]; then
    k=("$kubectl" --kubeconfig "$KCR_TEST_KUBECONFIG")
    # Namespaced objects need their namespace to exist even in a dry run.
    "${k[@]}" get namespace kcr-system >/dev/null 2>&1 ||
      "${k[@]}" create namespace kcr-system >/dev/null
    # cert-manager's kinds: stand-in CRDs (schema-free) when cert-manager is absent.
    . "$root/test/integration/certmanager_standins.sh"
    certmanager_standins "${k[@]}" >/dev/null
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
